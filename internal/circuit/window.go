package circuit

import (
	"slices"
	"sort"
	"time"
)

// FailureRow is one stored failure count: one writer's failures of one
// function in one second.
type FailureRow struct {
	ID        string // stable identity of the stored row
	Circuit   string // app/function
	Second    time.Time
	Count     int
	Successes int // successes the same writer reported for that second
	// Throttling are the failures among Count whose error looked like a
	// downstream pushing back (429, 503, ServerBusy...).
	Throttling int
	Modified   time.Time // when storage last changed the row (its clock)
	// TraceParent is the W3C traceparent of the report that wrote it, if any.
	TraceParent string
	// Source is the instance that reported the failures: the writer's
	// own id for rows written to the table, the instance a client named
	// for HTTP reports.
	Source string
	// Named says Source is an instance: one a report named, or a writer
	// of the table's own; not the id Fusebox gives an HTTP request that
	// named none. Only named sources count toward a quorum.
	Named bool
	// Sample is the last error text the row's writer sent; only reads of
	// one circuit's rows carry it (the evaluator's window does not).
	Sample string
	// Via says which kind of report the row's counts came from: reported
	// as such, or a function's Executed log records, which count only
	// where no span tells of the same calls (Countable).
	Via Via
	// Errors are the row's failures by kind of error, most first, when its
	// writer kept them (Fusebox does): one report may carry several kinds
	// in one second, and a row's Sample names only the last. Failures of
	// Count not in them are of kinds past the row's bound. Read, like
	// Sample, only for one circuit's rows.
	Errors []ErrorCount
}

// Via is which kind of report a failure row's counts came from, as far
// as counting goes.
type Via uint8

const (
	// Direct counts are reported as such: the failure API, a span, a
	// writer of the table.
	Direct Via = iota
	// Records are counts of a function's Executed log records. The same
	// host may export a span of each call too, on another timer: records
	// count only where no direct row of the function lies within
	// RecordsGrace of their second, and only once that grace has passed,
	// so that whichever signal arrives first, each call counts once.
	Records
	// FailedRecords are Records of a function whose records have shown no
	// succeeded call: a log level above Information hides those, so no
	// ratio can be judged on them (Counts.HiddenSuccesses).
	FailedRecords
	// RecordsAlone and FailedRecordsAlone are Records and FailedRecords of
	// a function whose host sent no span of it lately (otlp.Quiet): they
	// count at once, with no grace to wait, and still give way to a
	// direct row within RecordsGrace of their second, should a span of
	// the same calls come after all.
	RecordsAlone
	FailedRecordsAlone
)

// waits says whether rows of v wait RecordsGrace for spans of their calls.
func (v Via) waits() bool { return v == Records || v == FailedRecords }

// HidesSuccesses says whether rows of v come from records whose log level
// hides succeeded calls: no ratio is judged on them.
func (v Via) HidesSuccesses() bool { return v == FailedRecords || v == FailedRecordsAlone }

// RecordsGrace is how long a function's records wait for spans of the
// same calls: the OpenTelemetry SDKs export spans every 5 s by default
// (OTEL_BSP_SCHEDULE_DELAY) and log records every second, so a host's
// span of a call may arrive seconds after its record, or before it.
const RecordsGrace = 10 * time.Second

// Countable are the rows that count at now: rows does not change, and is
// returned itself when it holds no records. A row of records is left out
// when a direct row of its circuit lies within RecordsGrace of its second
// (a span counted the same calls), or, when none does and its function's
// spans do come (Records, FailedRecords), until its second is
// RecordsGrace old (a span may still come).
func Countable(rows []FailureRow, now time.Time) []FailureRow {
	records := false
	for i := range rows {
		if rows[i].Via != Direct {
			records = true
			break
		}
	}
	if !records {
		return rows
	}
	direct := map[string][]int64{} // circuit -> seconds of its direct rows
	for i := range rows {
		if r := &rows[i]; r.Via == Direct {
			direct[r.Circuit] = append(direct[r.Circuit], r.Second.Unix())
		}
	}
	for _, secs := range direct {
		slices.Sort(secs)
	}
	grace := int64(RecordsGrace / time.Second)
	waitFrom := now.Add(-RecordsGrace)
	out := make([]FailureRow, 0, len(rows))
	for _, r := range rows {
		if r.Via != Direct {
			secs := direct[r.Circuit]
			at := r.Second.Unix()
			i, _ := slices.BinarySearch(secs, at-grace)
			if i < len(secs) && secs[i] <= at+grace || r.Via.waits() && r.Second.After(waitFrom) {
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// ErrorCount is how many of a row's failures one kind of error text
// (errortexts.Fingerprint) accounts for, with its latest text.
type ErrorCount struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// MaxRowErrors bounds the kinds of error one failure row keeps: the
// rest of its failures are counted as other errors.
const MaxRowErrors = 8

// Same says whether two readings of a row are alike in all it counts by
// (its texts aside, which a window read does not carry).
func (r FailureRow) Same(o FailureRow) bool {
	return r.ID == o.ID && r.Circuit == o.Circuit && r.Second.Equal(o.Second) && r.Count == o.Count && r.Successes == o.Successes &&
		r.Throttling == o.Throttling && r.Modified.Equal(o.Modified) && r.TraceParent == o.TraceParent && r.Source == o.Source &&
		r.Named == o.Named && r.Sample == o.Sample && slices.Equal(r.Errors, o.Errors)
}

// SourceCount is one instance's share of a circuit's window.
type SourceCount struct {
	Source              string
	Failures, Successes int
}

// BySource breaks a circuit's failures in (from, to] down by the instance
// that reported them, most failures first, at most limit of them.
func BySource(rows []FailureRow, circuitID string, from, to time.Time, limit int) []SourceCount {
	sums := map[string]*SourceCount{}
	for _, r := range Countable(rows, to) {
		if r.Circuit != circuitID || !r.Second.After(from) || r.Second.After(to) {
			continue
		}
		s := sums[r.Source]
		if s == nil {
			s = &SourceCount{Source: r.Source}
			sums[r.Source] = s
		}
		s.Failures += r.Count
		s.Successes += r.Successes
	}
	out := make([]SourceCount, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Failures != out[j].Failures {
			return out[i].Failures > out[j].Failures
		}
		return out[i].Source < out[j].Source
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Stamp is what one circuit's failure rows of a span are, as far as
// telling two readings apart goes: how many, their failures, and the
// latest change the store made to any of them. A row added, changed,
// deleted or moved out of the span changes it.
type Stamp struct {
	Rows, Failures int
	Latest         time.Time
}

// StampOf stamps circuitID's rows with seconds in [from, to].
func StampOf(rows []FailureRow, circuitID string, from, to time.Time) Stamp {
	var s Stamp
	for _, r := range rows {
		if r.Circuit != circuitID || r.Second.Before(from) || r.Second.After(to) {
			continue
		}
		s.Rows++
		s.Failures += r.Count
		if r.Modified.After(s.Latest) {
			s.Latest = r.Modified
		}
	}
	return s
}

// Rejection is a stored row that could not be read as a failure count.
type Rejection struct {
	ID     string
	Reason string
}

// CountRows adds up, for each circuit, the failures in its window ending
// at now and those that count toward its next decision, of rows given
// once each. Rows for seconds after now (a writer whose clock runs ahead)
// wait until their second comes.
func CountRows(rows []FailureRow, circuits []Circuit, now time.Time) map[string]Counts {
	type span struct {
		window, counted time.Time
		quorum          int // the instances to count up to; 0: none
	}
	rows = Countable(rows, now)
	spans := make(map[string]span, len(circuits))
	counts := make(map[string]Counts, len(circuits))
	instances := map[string]map[string]bool{} // by circuit, for quorums: at most MinInstances each
	for _, c := range circuits {
		since, id := c.CountsFrom(now), c.ID() // an ID is built each call: once here, 10,000 times a tick at scale
		spans[id] = span{now.Add(-c.Window), since, max(c.Rule.MinInstances, 0)}
		counts[id] = Counts{Since: since, Whole: !since.After(now.Add(-c.Window))}
	}
	for _, r := range rows {
		sp, ok := spans[r.Circuit]
		if !ok || r.Second.After(now) {
			continue
		}
		// A second [s, s+1) is in the window (now-W, now] when s > now-W,
		// so that whole seconds fall in or out; the second in which the
		// circuit last changed counts for the time before the change.
		if !r.Second.After(sp.window) {
			continue
		}
		n := counts[r.Circuit]
		n.Window += r.Count
		if r.Second.After(sp.counted) {
			n.Counted += r.Count
			n.Successes += r.Successes
			n.Throttling += r.Throttling
			if r.Via.HidesSuccesses() {
				n.HiddenSuccesses += r.Count
			}
			if r.TraceParent != "" && !r.Second.Before(n.newest) {
				n.TraceParent, n.newest = r.TraceParent, r.Second
			}
			// Counted only up to the quorum: a reporter naming many
			// instances costs no more than the quorum's entries.
			if n.Instances < sp.quorum && sp.quorum > 1 && r.Named && r.Count > 0 {
				if instances[r.Circuit] == nil {
					instances[r.Circuit] = map[string]bool{}
				}
				if !instances[r.Circuit][r.Source] {
					instances[r.Circuit][r.Source] = true
					n.Instances++
				}
			}
		}
		counts[r.Circuit] = n
	}
	return counts
}

// MinuteCount is the failures of one function in one minute, added up
// from its rows (the roll-up), for charts and the functions no circuit
// guards.
type MinuteCount struct {
	Circuit string // app/function
	Minute  time.Time
	Count   int
}
