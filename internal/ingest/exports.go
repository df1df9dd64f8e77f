package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/otlp"
)

// This file counts what function hosts export over OpenTelemetry: the
// invocations otlp maps from an export become items of a Batch, like any
// other report.

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
	Reports  *Service
	Seen     *otlp.Seen
	Arrivals *Arrivals
	Now      func() time.Time
	// Runs, if set, keeps the counted invocations of functions that jobs
	// name as those jobs' runs (jobs.Invocations), and says how many it
	// kept. An error leaves the export unanswered, for the exporter to
	// send again: its rows are replaced then, and its runs kept once.
	Runs func(ctx context.Context, appID string, invs []otlp.Invocation) (int, error)

	mu    sync.Mutex
	heard map[heardKey]time.Time // a function's span signal -> when it last arrived, on any instance
	read  map[string]time.Time   // app -> when the other instances' rows were last read for it
}

type heardKey struct {
	app, function string
	signal        otlp.Signal
}

// maxHeard bounds what is remembered of functions' signals: every app was
// named by a verified key, and ingest keeps 50 new function names per app
// and hour.
const maxHeard = 100_000

// hear remembers that signal told of function now.
func (r *Exports) hear(appID, function string, signal otlp.Signal, at time.Time) {
	k := heardKey{appID, function, signal}
	if r.heard == nil || len(r.heard) >= maxHeard {
		r.heard = map[heardKey]time.Time{}
	}
	if at.After(r.heard[k]) {
		r.heard[k] = at
	}
}

// outranked says whether a better signal than inv's told of inv's
// function within Quiet. Decided per function, never per app: one
// function may send spans while another sends only records, and a log
// level that hides the host's "Executed … (Succeeded …)" records must
// not leave its failures counted alone.
func (r *Exports) outranked(appID string, inv otlp.Invocation, now time.Time) bool {
	if now.Sub(r.heard[heardKey{appID, inv.Function, otlp.SpansMissFailures}]) < otlp.Expect {
		return inv.Signal != otlp.ExecutedRecord && now.Sub(r.heard[heardKey{appID, inv.Function, otlp.ExecutedRecord}]) < otlp.Quiet
	}
	for better := otlp.HostSpan; better < inv.Signal; better++ {
		if now.Sub(r.heard[heardKey{appID, inv.Function, better}]) < otlp.Quiet {
			return true
		}
	}
	return false
}

// via is how a function's counted Executed records are kept. Records
// that count a function whose spans miss failures are what counts it;
// others wait for spans of the same calls (circuit.Countable), and those
// of a function whose records never showed a success (a log level above
// Information) judge no ratio.
func (r *Exports) via(appID, function string, now time.Time) circuit.Via {
	switch {
	case now.Sub(r.heard[heardKey{appID, function, otlp.SpansMissFailures}]) < otlp.Expect:
		return circuit.Direct
	case now.Sub(r.heard[heardKey{appID, function, otlp.RecordsShowSuccesses}]) < otlp.Expect:
		return circuit.Records
	}
	return circuit.FailedRecords
}

// readOthers learns, at most every 30 s per app, which functions other
// instances heard spans of. A failed read leaves what is known: a double
// count for a while is better than none.
func (r *Exports) readOthers(ctx context.Context, appID string, now time.Time) {
	r.mu.Lock()
	due := now.Sub(r.read[appID]) >= 30*time.Second
	if due {
		if r.read == nil || len(r.read) >= maxApps {
			r.read = map[string]time.Time{}
		}
		r.read[appID] = now
	}
	r.mu.Unlock()
	if !due || r.Arrivals == nil || r.Arrivals.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := r.Arrivals.Store.ArrivalsOf(ctx, appID, now.Add(-otlp.Quiet))
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, row := range rows {
		for fn, sig := range row.Functions {
			r.hear(appID, fn, sig, row.Last)
		}
	}
}

// maxApps bounds the apps remembered; every app was named by a verified key.
const maxApps = 10_000

// Take counts an export. An error wraps ingest.ErrUnavailable: nothing
// was kept and the exporter should send it again.
func (r *Exports) Take(ctx context.Context, e Export) (Answer, error) {
	now := r.Now()
	m := e.Mapped
	got := otlp.Arrival{App: e.AppID, Source: m.Source, Protocol: e.Protocol, Exports: 1, Records: m.Records,
		Invocations: len(m.Invocations), Unattributed: m.Unattributed, ServiceNames: m.ServiceNames, Last: now}
	for _, d := range m.Dependencies {
		got.AddCall(d.Target, d.Trace)
	}
	// The export's key: the same invocations sent again (a retry) are
	// written under the same writer, their rows replaced.
	key := m.Key()
	if needsOthers(m.Invocations) {
		r.readOthers(ctx, e.AppID, now)
	}
	type told struct {
		function string
		signal   otlp.Signal
	}
	heard := map[told]bool{}
	for _, inv := range m.Invocations {
		sig := inv.Signal
		if sig == otlp.ExecutedRecord && !inv.Failed {
			sig = otlp.RecordsShowSuccesses // told to the other instances, as spans are
			heard[told{inv.Function, sig}] = true
		}
		heard[told{inv.Function, inv.Signal}] = true
		if sig != otlp.ExecutedRecord && len(got.Functions) < otlp.MaxFunctions {
			if got.Functions == nil {
				got.Functions = map[string]otlp.Signal{}
			}
			if have, ok := got.Functions[inv.Function]; !ok || sig < have {
				got.Functions[inv.Function] = sig
			}
		}
	}
	r.mu.Lock()
	for k := range heard {
		r.hear(e.AppID, k.function, k.signal, now)
	}
	invs := make([]otlp.Invocation, 0, len(m.Invocations))
	for _, inv := range m.Invocations {
		if r.Seen.MissedFailure(e.AppID, inv) {
			// Counted as a success from its span: this one failure is
			// counted too (one call more than there was), and from now on
			// the function's records count it.
			r.hear(e.AppID, inv.Function, otlp.SpansMissFailures, now)
			got.MissedFailures++
			invs = append(invs, inv)
			continue
		}
		if r.outranked(e.AppID, inv, now) {
			got.Outranked++
			continue
		}
		invs = append(invs, inv)
	}
	via := map[string]circuit.Via{} // of the functions whose records are counted
	for _, inv := range invs {
		if _, ok := via[inv.Function]; !ok && inv.Signal == otlp.ExecutedRecord {
			via[inv.Function] = r.via(e.AppID, inv.Function, now)
		}
	}
	r.mu.Unlock()
	invs, got.Duplicates = r.Seen.Fresh(e.AppID, key, invs, now)
	var ans Answer
	if len(invs) > 0 {
		res, err := r.Reports.Take(ctx, batch(e.AppID, key, invs, via))
		if err != nil {
			return Answer{}, err
		}
		kept := accepted(invs, res.Rejected)
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

func batch(appID, key string, invs []otlp.Invocation, via map[string]circuit.Via) Batch {
	one := 1
	b := Batch{AppID: appID, Items: make([]Item, len(invs)), Content: "otlp." + key, MaxRows: MaxExportRows}
	for i, inv := range invs {
		it := Item{Function: inv.Function, At: inv.At, Instance: inv.Instance}
		if inv.Signal == otlp.ExecutedRecord {
			it.Via = via[inv.Function]
		}
		if inv.Failed {
			it.Count, it.Sample, it.TraceParent = &one, inv.Sample, inv.Trace
		} else {
			it.Successes = &one
		}
		b.Items[i] = it
	}
	return b
}
