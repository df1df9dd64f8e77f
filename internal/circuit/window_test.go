package circuit_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// A function's Executed records and its spans tell of the same calls, on
// timers of their own: whichever is stored first, each call counts once,
// and records that hide successes judge no ratio.
func TestRecordsCountOnlyWhereNoSpanTellsOfTheSameCalls(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	ci := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 1000, Window: time.Minute, Rule: circuit.Rule{Ratio: 0.5, MinCalls: 100}}, State: circuit.Closed}
	records := func(at time.Time, via circuit.Via) circuit.FailureRow {
		return circuit.FailureRow{ID: "r" + at.Format(time.TimeOnly), Circuit: ci.ID(), Second: at, Count: 200, Via: via}
	}
	spans := func(at time.Time) circuit.FailureRow {
		return circuit.FailureRow{ID: "s" + at.Format(time.TimeOnly), Circuit: ci.ID(), Second: at, Count: 200, Successes: 1800}
	}
	count := func(rows ...circuit.FailureRow) circuit.Counts {
		return circuit.CountRows(rows, []circuit.Circuit{ci}, now)[ci.ID()]
	}

	// Records first, just stored: they wait for spans.
	if n := count(records(now.Add(-2*time.Second), circuit.FailedRecords)); n.Counted != 0 || circuit.Trips(ci, n) {
		t.Errorf("records 2 s old counted %+v; want them waiting for spans", n)
	}
	// The spans came: the records are the same calls.
	n := count(records(now.Add(-2*time.Second), circuit.FailedRecords), spans(now.Add(-3*time.Second)))
	if n.Counted != 200 || n.Successes != 1800 || circuit.Trips(ci, n) {
		t.Errorf("records and spans of the same calls counted %+v; want the spans' 200 and 1,800 once", n)
	}
	// No span within the grace: the records count, but judge no ratio,
	// and say why.
	n = count(records(now.Add(-20*time.Second), circuit.FailedRecords))
	if n.Counted != 200 || !n.SuccessesUnknown() || circuit.Trips(ci, n) {
		t.Errorf("records of failures alone counted %+v (trips %v); want 200 counted, successes unknown, no trip", n, circuit.Trips(ci, n))
	}
	// Records that show successes judge it as spans would.
	rec := records(now.Add(-20*time.Second), circuit.Records)
	rec.Successes = 100
	if n = count(rec); n.Counted != 200 || n.SuccessesUnknown() || !circuit.Trips(ci, n) {
		t.Errorf("records with successes counted %+v; want 200 of 300 calls, tripping", n)
	}
	// Spans of other calls far from the records leave the records counted.
	if n = count(records(now.Add(-40*time.Second), circuit.Records), spans(now.Add(-5*time.Second))); n.Counted != 400 {
		t.Errorf("records 35 s from any span counted %d; want both rows' 400", n.Counted)
	}
	// Records of a host that sends no spans count at once, and still give
	// way to a span of the same calls that comes after all.
	if n = count(records(now.Add(-2*time.Second), circuit.RecordsAlone)); n.Counted != 200 {
		t.Errorf("records of a host without spans, 2 s old, counted %d; want 200 at once", n.Counted)
	}
	if n = count(records(now.Add(-2*time.Second), circuit.FailedRecordsAlone)); n.Counted != 200 || !n.SuccessesUnknown() {
		t.Errorf("failed records of a host without spans counted %+v; want 200 at once, successes unknown", n)
	}
	if n = count(records(now.Add(-2*time.Second), circuit.RecordsAlone), spans(now.Add(-1*time.Second))); n.Counted != 200 || n.Successes != 1800 {
		t.Errorf("records alone and a span of the same calls counted %+v; want the span's 200 and 1,800 once", n)
	}
	// A row without records is handed back as it is.
	rows := []circuit.FailureRow{spans(now)}
	if got := circuit.Countable(rows, now); &got[0] != &rows[0] {
		t.Error("rows without records were copied")
	}
}
