package otlp

import (
	"fmt"
	"testing"
	"time"
)

// runs are n invocations of function F told by signal, the first failed.
func runs(signal Signal, n int, at time.Time) []Invocation {
	invs := make([]Invocation, n)
	for i := range invs {
		invs[i] = Invocation{Function: "F", ID: fmt.Sprint("id-", i), At: at, Failed: i == 0, Signal: signal}
	}
	return invs
}

// TestJudgeCountsEachCallByItsBestSignalInEitherOrder: spans are counted
// whole whichever export comes first; records are counted only when they
// come first, and then wait for spans (circuit.Countable leaves them
// uncounted when spans arrive); a failure the spans missed is counted and
// makes records what counts the function from then on (its other records
// are the spans' calls again).
func TestJudgeCountsEachCallByItsBestSignalInEitherOrder(t *testing.T) {
	type want struct {
		counted, duplicates, outranked, missed int
		records                                Standing // of F, when records are counted
	}
	tests := []struct {
		name  string
		first []Invocation
		then  []Invocation
		want  [2]want
	}{
		{"spans, then records", runs(HostSpan, 10, at), runs(ExecutedRecord, 10, at),
			[2]want{{counted: 10}, {outranked: 10}}},
		{"records, then spans", runs(ExecutedRecord, 10, at), runs(HostSpan, 10, at),
			[2]want{{counted: 10, records: RecordsWaitForSpans}, {counted: 10}}},
		{"records of failures alone, then spans", runs(ExecutedRecord, 10, at)[:1], runs(HostSpan, 10, at),
			[2]want{{counted: 1, records: RecordsOfFailuresOnly}, {counted: 10}}},
		{"the host's and the worker's span of the same calls", runs(HostSpan, 10, at), runs(WorkerSpan, 10, at),
			[2]want{{counted: 10}, {outranked: 10}}},
		{"spans that miss a failure, then its record", func() []Invocation {
			invs := runs(HostSpan, 10, at)
			invs[0].Failed = false
			return invs
		}(), runs(ExecutedRecord, 10, at),
			[2]want{{counted: 10}, {counted: 1, missed: 1, duplicates: 9, records: RecordsCount}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Seen
			for i, invs := range [][]Invocation{tc.first, tc.then} {
				v := s.Judge("app", fmt.Sprint("export-", i), invs, at)
				w := tc.want[i]
				if len(v.Count) != w.counted || v.Duplicates != w.duplicates || v.Outranked != w.outranked || v.MissedFailures != w.missed {
					t.Errorf("export %d: counted %d, duplicates %d, outranked %d, missed %d; want %d, %d, %d, %d",
						i, len(v.Count), v.Duplicates, v.Outranked, v.MissedFailures, w.counted, w.duplicates, w.outranked, w.missed)
				}
				if got, ok := v.Records["F"]; ok != (invs[0].Signal == ExecutedRecord && w.counted > 0) || got != w.records {
					t.Errorf("export %d: records of F stand %d (%t), want %d", i, got, ok, w.records)
				}
				s.Counted("app", fmt.Sprint("export-", i), v.Count, at)
			}
		})
	}
}

// TestJudgeHearsTheOtherInstances: a span another instance heard of a
// function outranks its records here, until Quiet has passed.
func TestJudgeHearsTheOtherInstances(t *testing.T) {
	var s Seen
	if !s.OthersDue("app", at) || s.OthersDue("app", at.Add(29*time.Second)) || !s.OthersDue("app", at.Add(30*time.Second)) {
		t.Error("the other instances' rows are not read at most every 30 s")
	}
	s.HearOthers("app", []Arrival{{Functions: map[string]Signal{"F": HostSpan}, Last: at}}, true, at)
	if v := s.Judge("app", "export", runs(ExecutedRecord, 3, at.Add(Quiet-time.Second)), at.Add(Quiet-time.Second)); v.Outranked != 3 {
		t.Errorf("records within Quiet of another instance's span: %d outranked, want 3", v.Outranked)
	}
	if v := s.Judge("app", "later", runs(ExecutedRecord, 3, at.Add(Quiet)), at.Add(Quiet)); len(v.Count) != 3 {
		t.Errorf("records Quiet after another instance's span: %d counted, want 3", len(v.Count))
	}
	if v := s.Judge("other", "export", runs(ExecutedRecord, 3, at), at); len(v.Count) != 3 {
		t.Errorf("another app's records: %d counted, want 3", len(v.Count))
	}
}

// TestRecordsOfAFunctionNoSpanToldOfCountAtOnce: once the other instances'
// rows of the last Quiet were read, a function no span told of for Quiet
// has records that wait for none; before any read nothing is known of the
// other instances, so they wait. A function whose spans came within
// Quiet, here or elsewhere, has its records outranked: they count not at
// all, and its spans decide.
func TestRecordsOfAFunctionNoSpanToldOfCountAtOnce(t *testing.T) {
	var s Seen
	judge := func(function string, invs []Invocation, now time.Time) Verdict {
		for i := range invs {
			invs[i].Function = function
		}
		return s.Judge("app", function+now.String(), invs, now)
	}
	standing := func(what, function string, invs []Invocation, now time.Time, want Standing) {
		t.Helper()
		v := judge(function, invs, now)
		if got, ok := v.Records[function]; !ok || got != want {
			t.Errorf("%s: records of %s stand %d (counted %t), want %d", what, function, got, ok, want)
		}
	}
	// Rows of which one did not read tell nothing of silence.
	var partial Seen
	partial.HearOthers("app", nil, false, at)
	if v := partial.Judge("app", "first", runs(ExecutedRecord, 3, at), at); v.Records["F"] != RecordsWaitForSpans {
		t.Errorf("after a read that skipped a row: records stand %d, want them waiting (%d)", v.Records["F"], RecordsWaitForSpans)
	}
	// The first thing an instance hears of the app is the others' rows.
	var fresh Seen
	fresh.HearOthers("app", nil, true, at)
	if v := fresh.Judge("app", "first", runs(ExecutedRecord, 3, at), at); v.Records["F"] != RecordsAlone || len(v.Count) != 3 {
		t.Errorf("the first export after the others' rows were read: records stand %d, want %d", v.Records["F"], RecordsAlone)
	}
	standing("before the other instances were read", "Logs", runs(ExecutedRecord, 3, at), at, RecordsWaitForSpans)
	s.HearOthers("app", []Arrival{{Functions: map[string]Signal{"Spans": HostSpan}, Last: at}}, true, at)
	standing("no span of the function, here or elsewhere", "Logs", runs(ExecutedRecord, 3, at.Add(time.Second)), at.Add(time.Second), RecordsAlone)
	standing("failed records alone of a function without spans", "Hidden", runs(ExecutedRecord, 1, at), at, FailedRecordsAlone)
	if v := judge("Spans", runs(ExecutedRecord, 3, at.Add(time.Minute)), at.Add(time.Minute)); v.Outranked != 3 {
		t.Errorf("another instance heard the function's spans a minute ago: %d of 3 records outranked", v.Outranked)
	}
	judge("Here", runs(HostSpan, 3, at), at)
	if v := judge("Here", runs(ExecutedRecord, 3, at.Add(Quiet-time.Second)), at.Add(Quiet-time.Second)); v.Outranked != 3 {
		t.Errorf("spans heard here within Quiet: %d of 3 records outranked", v.Outranked)
	}
	later := func(tag string) []Invocation {
		invs := runs(ExecutedRecord, 3, at.Add(Quiet))
		for i := range invs {
			invs[i].ID += tag
		}
		return invs
	}
	standing("no span for Quiet, but the others' rows read long ago", "Here", later("-stale"), at.Add(Quiet), RecordsWaitForSpans)
	s.HearOthers("app", nil, true, at.Add(Quiet))
	standing("no span for Quiet", "Here", later("-later"), at.Add(Quiet), RecordsAlone)
}
