package otlp

import "time"

// This file is the per-function signal rule: which of an export's
// invocations count, decided from what Seen heard, under one lock, so that
// two exports of spans and log records give the same counts in any order.

type signalKey struct {
	app, function string
	signal        Signal
}

// maxSignals bounds the functions' signals remembered: every app was named
// by a verified key, and ingest keeps 50 new function names per app and
// hour.
const maxSignals = 100_000

// maxApps bounds the apps whose reading of other instances is remembered;
// every app was named by a verified key.
const maxApps = 10_000

// Standing is what a function's Executed records are worth, by what was
// heard of it: the breaker's circuit.Via, in this package's terms.
type Standing int8

const (
	// RecordsWaitForSpans: the records showed successes, and count only
	// where no span tells of the same calls.
	RecordsWaitForSpans Standing = iota
	// RecordsCount: the function's spans miss failures, so its records
	// are what counts it.
	RecordsCount
	// RecordsOfFailuresOnly: the records never showed a success (a log
	// level above Information), so they judge no ratio.
	RecordsOfFailuresOnly
	// RecordsAlone and FailedRecordsAlone are RecordsWaitForSpans and
	// RecordsOfFailuresOnly of a function no span told of for Quiet, here
	// or on another instance: a host that exports logs and no spans. Its
	// records count at once rather than after the grace a span would
	// need; a span of the same calls that comes after all still takes
	// their place (circuit.Countable).
	RecordsAlone
	FailedRecordsAlone
)

// Verdict is what Judge decided of one export's invocations.
type Verdict struct {
	// Count are the invocations to count, in the export's order.
	Count []Invocation
	// Records is the standing of each function of an Executed record in
	// Count.
	Records map[string]Standing
	// Duplicates are invocations another export counted, or this one
	// named twice.
	Duplicates int
	// Outranked are invocations a better signal tells of (Signal).
	Outranked int
	// MissedFailures are failed Executed records of invocations a span
	// counted as succeeded: counted too (one call more than there was),
	// and from now on the function's records count it.
	MissedFailures int
}

// Judge hears an export's signals and decides which of its invocations
// count; Counted, once they are kept, remembers them. Decided per
// function, never per app: one function may send spans while another
// sends only records, and a log level that hides the host's "Executed …
// (Succeeded …)" records must not leave its failures counted alone.
func (s *Seen) Judge(appID, export string, invs []Invocation, now time.Time) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(now)
	var last signalKey // an export names few functions, many times
	for _, inv := range invs {
		if k := (signalKey{appID, inv.Function, inv.Signal}); k != last {
			s.hear(k, now)
			last = k
		}
		if inv.Signal == ExecutedRecord && !inv.Failed {
			// Told to the other instances, as spans are (Arrival.Functions).
			s.hear(signalKey{appID, inv.Function, RecordsShowSuccesses}, now)
		}
	}
	v := Verdict{Count: make([]Invocation, 0, len(invs))}
	// The same invocation twice in one export: one map kept and cleared,
	// under the lock, rather than one made per export.
	if s.here == nil {
		s.here = map[seenKey]bool{}
	}
	here := s.here
	defer clear(here)
	this := exportOf(export)
	for _, inv := range invs {
		var by counted
		var ok bool
		if inv.ID != "" {
			inv.seen = keyOf(appID, inv.ID) // for Counted, which would hash it again
			by, ok = s.lookup(inv.seen)
		}
		missed := ok && Signal(by.signal) != ExecutedRecord && !by.failed && inv.Signal == ExecutedRecord && inv.Failed
		switch {
		case missed:
			s.hear(signalKey{appID, inv.Function, SpansMissFailures}, now)
			v.MissedFailures++
		case s.outranked(appID, inv, now):
			v.Outranked++
			continue
		}
		if inv.ID != "" {
			if here[inv.seen] {
				v.Duplicates++
				continue
			}
			here[inv.seen] = true
			// A span of a call its record counted counts too: the record's
			// row is then left uncounted (circuit.Countable), so the span,
			// which shows successes, decides whichever came first.
			spanAfterRecord := Signal(by.signal) == ExecutedRecord && inv.Signal != ExecutedRecord
			if ok && by.export != this && !missed && !spanAfterRecord {
				v.Duplicates++
				continue
			}
		}
		v.Count = append(v.Count, inv)
	}
	for _, inv := range v.Count {
		if _, ok := v.Records[inv.Function]; !ok && inv.Signal == ExecutedRecord {
			if v.Records == nil {
				v.Records = map[string]Standing{}
			}
			v.Records[inv.Function] = s.standing(appID, inv.Function, now)
		}
	}
	return v
}

// hear remembers that a signal told of a function at at.
func (s *Seen) hear(k signalKey, at time.Time) {
	if len(s.signals) >= maxSignals {
		s.signals = nil
		s.covered = nil // what was heard is forgotten: no app's silence is known
		s.resets++
	}
	if s.signals == nil {
		s.signals = map[signalKey]time.Time{}
	}
	if at.After(s.signals[k]) {
		s.signals[k] = at
	}
}

// since is how long ago signal last told of function.
func (s *Seen) since(appID, function string, signal Signal, now time.Time) time.Duration {
	return now.Sub(s.signals[signalKey{appID, function, signal}])
}

// outranked says whether a better signal than inv's told of inv's
// function within Quiet.
func (s *Seen) outranked(appID string, inv Invocation, now time.Time) bool {
	if s.since(appID, inv.Function, SpansMissFailures, now) < Expect {
		return inv.Signal != ExecutedRecord && s.since(appID, inv.Function, ExecutedRecord, now) < Quiet
	}
	for better := HostSpan; better < inv.Signal; better++ {
		if s.since(appID, inv.Function, better, now) < Quiet {
			return true
		}
	}
	return false
}

// standing is what function's counted Executed records are worth.
func (s *Seen) standing(appID, function string, now time.Time) Standing {
	if s.since(appID, function, SpansMissFailures, now) < Expect {
		return RecordsCount
	}
	successes := s.since(appID, function, RecordsShowSuccesses, now) < Expect
	switch alone := s.spanless(appID, function, now); {
	case successes && alone:
		return RecordsAlone
	case successes:
		return RecordsWaitForSpans
	case alone:
		return FailedRecordsAlone
	}
	return RecordsOfFailuresOnly
}

// spanless says whether no span told of function for Quiet, on any
// instance: known only while the other instances' rows of the last Quiet
// were read lately (HearOthers, at most every 30 s while records come),
// else a span may have come where this instance did not hear it.
func (s *Seen) spanless(appID, function string, now time.Time) bool {
	read, ok := s.covered[appID]
	return ok && now.Sub(read) < coveredFor && s.since(appID, function, HostSpan, now) >= Quiet && s.since(appID, function, WorkerSpan, now) >= Quiet
}

// coveredFor is how long a read of the other instances' rows tells what
// they heard: two reads' worth, so one that fails leaves records waiting.
const coveredFor = time.Minute

// OthersDue says whether the other instances' arrival rows of appID are
// to be read now (at most every 30 s), and counts them read.
func (s *Seen) OthersDue(appID string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.read[appID]) < 30*time.Second {
		return false
	}
	if s.read == nil || len(s.read) >= maxApps {
		s.read = map[string]time.Time{}
	}
	s.read[appID] = now
	return true
}

// HearOthers remembers which signals told the other instances of appID's
// functions, by their arrival rows of the last Quiet (all of them: a read
// cut short is not heard). Only whole rows (none skipped as unreadable)
// tell that a function had no span.
func (s *Seen) HearOthers(appID string, rows []Arrival, whole bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resets := s.resets
	for _, row := range rows {
		for fn, sig := range row.Functions {
			s.hear(signalKey{appID, fn, sig}, row.Last)
		}
	}
	if s.resets != resets || !whole {
		return // some of what the rows told is forgotten already, or was never read
	}
	if s.covered == nil || len(s.covered) >= maxApps {
		s.covered = map[string]time.Time{}
	}
	s.covered[appID] = now
}
