package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/otlp"
)

// This file counts what function hosts export over OpenTelemetry: the
// invocations otlp.Seen judges to count become reports, already checked by
// the mapping (a function's name, one call each), and are kept as every
// report is.

// Export is one decoded export request of an app whose key verified.
type Export struct {
	AppID    string
	Protocol string
	Mapped   otlp.Mapped
}

// Answer is what the exporter is told: OTLP's partial success.
type Answer struct {
	Rejected int    // spans or log records refused
	Message  string // why, for the exporter's log
}

// Exports takes what apps export over OpenTelemetry (the OTLP receiver
// decodes, this counts), beside the failure API's Service.
type Exports struct {
	Reports *Service
	// Seen is what this instance heard of every app's exports, and
	// decides which invocations count.
	Seen     *otlp.Seen
	Arrivals *Arrivals
	Now      func() time.Time
	// Runs, if set, keeps the counted invocations of functions that jobs
	// name as those jobs' runs (jobs.Invocations), and says how many it
	// kept. An error leaves the export unanswered, for the exporter to
	// send again: its rows are replaced then, and its runs kept once.
	Runs func(ctx context.Context, appID string, invs []otlp.Invocation) (int, error)
}

// hearOthers learns, at most every 30 s per app, which functions other
// instances heard spans of. A failed read leaves what is known: a double
// count for a while is better than none.
func (r *Exports) hearOthers(ctx context.Context, appID string, now time.Time) {
	if !r.Seen.OthersDue(appID, now) || r.Arrivals == nil || r.Arrivals.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, whole, err := r.Arrivals.Store.SignalsOf(ctx, appID, now.Add(-otlp.Quiet))
	if err != nil {
		return
	}
	r.Seen.HearOthers(appID, rows, whole, now)
}

// Take counts an export. An error wraps ingest.ErrUnavailable: nothing
// was kept and the exporter should send it again.
func (r *Exports) Take(ctx context.Context, e Export) (Answer, error) {
	now := r.Now()
	m := e.Mapped
	got := arrivalOf(e, now)
	// The export's key: the same invocations sent again (a retry) are
	// written under the same writer, their rows replaced.
	key := m.Key()
	if needsOthers(m.Invocations) {
		r.hearOthers(ctx, e.AppID, now)
	}
	v := r.Seen.Judge(e.AppID, key, m.Invocations, now)
	got.Duplicates, got.Outranked, got.MissedFailures = v.Duplicates, v.Outranked, v.MissedFailures
	var ans Answer
	if len(v.Count) > 0 {
		// Its tallies of functions without a circuit are added again when
		// it is sent again: they are shown, never evaluated.
		w := writing{writer: "content.otlp." + key, maxRows: MaxExportRows}
		res, err := r.Reports.keep(ctx, e.AppID, w, reportsOf(e.AppID, v, now), now)
		if err != nil {
			return Answer{}, err
		}
		kept := accepted(v.Count, res.Rejected)
		if r.Runs != nil {
			runs, err := r.Runs(ctx, e.AppID, kept)
			if errors.Is(err, ErrRowBudget) {
				return Answer{}, err // sent again later: its rows are replaced then
			}
			if err != nil {
				return Answer{}, fmt.Errorf("%w: runs of jobs: %w", ErrUnavailable, err)
			}
			got.JobRuns = runs
		}
		r.Seen.Counted(e.AppID, key, kept, now)
		got.Counted, got.Failures, got.Rejected = res.Accepted, res.Failures, len(res.Rejected)
		if len(res.Rejected) > 0 {
			ans = Answer{Rejected: len(res.Rejected), Message: fmt.Sprintf("%d invocations refused; the first: %s", len(res.Rejected), res.Rejected[0].Error)}
		}
	}
	r.Arrivals.Add(got)
	return ans, nil
}

// arrivalOf is what an export brought, before it is counted: the
// functions its spans named, each with the best signal that told of it,
// tell the other instances which signal counts a function.
func arrivalOf(e Export, now time.Time) otlp.Arrival {
	m := e.Mapped
	got := otlp.Arrival{App: e.AppID, Source: m.Source, Protocol: e.Protocol, Exports: 1, Records: m.Records,
		Invocations: len(m.Invocations), Unattributed: m.Unattributed, ServiceNames: m.ServiceNames, Last: now}
	for _, d := range m.Dependencies {
		got.AddCall(d.Target, d.Trace)
	}
	for _, inv := range m.Invocations {
		sig := inv.Signal
		if sig == otlp.ExecutedRecord {
			if inv.Failed {
				continue // outranks no signal: not told
			}
			sig = otlp.RecordsShowSuccesses
		}
		if len(got.Functions) >= otlp.MaxFunctions {
			break
		}
		if have, ok := got.Functions[inv.Function]; ok && have <= sig {
			continue
		}
		if got.Functions == nil {
			got.Functions = map[string]otlp.Signal{}
		}
		got.Functions[inv.Function] = sig
	}
	return got
}

// reportsOf are the invocations v counts, as failure rows keep them: one
// call each, of a function whose name the mapping checked. Only their time
// is checked here, against now: it is the sender's.
func reportsOf(appID string, v otlp.Verdict, now time.Time) checked {
	c := checked{reports: make([]Report, 0, len(v.Count)), index: make([]int, 0, len(v.Count)), res: Result{Rejected: []Rejection{}}}
	var looks throttledText
	for i, inv := range v.Count {
		if why := outOfTime(inv.At, now); why != "" {
			c.res.Rejected = append(c.res.Rejected, Rejection{Index: i, Error: why})
			continue
		}
		r := Report{App: appID, Function: inv.Function, Second: inv.At, Instance: inv.Instance}
		if inv.Signal == otlp.ExecutedRecord {
			r.Via = via(v.Records[inv.Function])
		}
		if inv.Failed {
			r.Count, r.Sample, r.TraceParent = 1, inv.Sample, inv.Trace
			if inv.Sample != "" && looks.of(inv.Sample) {
				r.Throttling = 1
			}
		} else {
			r.Successes = 1
		}
		c.reports = append(c.reports, r)
		c.index = append(c.index, i)
		c.res.Accepted++
		c.res.Failures += r.Count
		c.res.Successes += r.Successes
	}
	return c
}

// via is how the failure rows keep Executed records of a standing:
// records that count a function whose spans miss failures are what counts
// it; others wait for spans of the same calls (circuit.Countable), and
// those of a function whose records never showed a success judge no
// ratio.
func via(s otlp.Standing) circuit.Via {
	switch s {
	case otlp.RecordsCount:
		return circuit.Direct
	case otlp.RecordsWaitForSpans:
		return circuit.Records
	case otlp.RecordsAlone:
		return circuit.RecordsAlone
	case otlp.FailedRecordsAlone:
		return circuit.FailedRecordsAlone
	}
	return circuit.FailedRecords
}

// needsOthers says whether any invocation could be outranked by a signal
// another instance heard.
func needsOthers(invs []otlp.Invocation) bool {
	for _, inv := range invs {
		if inv.Signal != otlp.HostSpan {
			return true
		}
	}
	return false
}

// accepted is invs without those ingest refused: a refused invocation is
// not remembered, so it costs no memory and a later, valid record of it
// still counts.
func accepted(invs []otlp.Invocation, rejected []Rejection) []otlp.Invocation {
	if len(rejected) == 0 {
		return invs
	}
	refused := make(map[int]bool, len(rejected))
	for _, x := range rejected {
		refused[x.Index] = true
	}
	out := make([]otlp.Invocation, 0, len(invs)-len(refused))
	for i, inv := range invs {
		if !refused[i] {
			out = append(out, inv)
		}
	}
	return out
}
