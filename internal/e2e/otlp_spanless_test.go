package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A host that exports logs and no spans: its Executed records wait for no
// span, so its failures trip as soon as they are stored, not a grace
// later. A function whose spans do come keeps the grace, whichever signal
// of a burst arrives first, and each call counts once.

// rowsOf adds up function's failure rows of the last minute: stored, and
// counting at now (circuit.Countable).
func rowsOf(t *testing.T, srv *apptest.Server, function string, now time.Time) (stored, counting int) {
	t.Helper()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), time.Now().Add(-time.Minute), time.Now().Add(time.Second), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Circuit == demo.AppID+"/"+function {
			stored += r.Count
		}
	}
	for _, r := range circuit.Countable(rows, now) {
		if r.Circuit == demo.AppID+"/"+function {
			counting += r.Count
		}
	}
	return stored, counting
}

// burst records n failures of function now, and returns when they were.
// Export answers come once the rows are stored: a flushed export's rows
// are there to read.
func burst(h *demo.Telemetry, function string, n int) time.Time {
	at := time.Now()
	for range n {
		h.Failures(function, 1, at, "downstream store offline")
	}
	return at
}

// assertState fails when function's circuit is not in state.
func assertState(t *testing.T, srv *apptest.Server, function string, state circuit.State, when string) {
	t.Helper()
	got, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, function)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != state {
		t.Fatalf("%s: %s is %s, want %s (%q)", when, function, got.State, state, got.Reason)
	}
}

func TestAHostThatSendsNoSpansTripsWithoutWaitingForThem(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	const function = "ReadLogsOnly"
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: function,
		Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	waitKnown(t, srv, function)
	host := shapedHost(t, srv, demo.Shape{NoSpans: true})
	at := burst(host, function, 150)
	if err := host.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		stored, _ := rowsOf(t, srv, function, time.Now())
		return stored == 150, fmt.Sprintf("%d of 150 failures stored", stored)
	})
	assertVia(t, srv, function, circuit.FailedRecordsAlone)
	if stored, counting := rowsOf(t, srv, function, time.Now()); counting != stored {
		t.Fatalf("%d failures stored %s after they happened, %d of them counting: records with no span to wait for wait anyway",
			stored, time.Since(at).Round(time.Millisecond), counting)
	}
	c := srv.WaitCircuit(t, demo.AppID, function, "open", func(c circuit.Circuit) bool { return c.State == circuit.Open })
	t.Logf("tripped %s after the failures (the records' grace is %s)", c.ChangedAt.Sub(at).Round(time.Millisecond), circuit.RecordsGrace)
}

// Records that counted at once, because no span of their function had
// come, give way to the spans of the same calls when those come after
// all: each call counts once.
func TestRecordsThatCountedAtOnceGiveWayToSpansThatComeAfterAll(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	const function = "SpansComeLate"
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: function,
		Settings: circuit.Settings{Threshold: 100_000, Window: time.Minute}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	waitKnown(t, srv, function)
	host, openSpans, openRecords := hostOver(t, srv, "http/protobuf", demo.Shape{})
	burst(host, function, 150)
	openRecords()
	if err := host.FlushRecords(t.Context()); err != nil {
		t.Fatal(err)
	}
	if stored, counting := rowsOf(t, srv, function, time.Now()); stored != 150 || counting != 150 {
		t.Fatalf("the records alone: %d failures stored, %d counting; want 150 counting at once", stored, counting)
	}
	assertVia(t, srv, function, circuit.FailedRecordsAlone)
	openSpans()
	if err := host.FlushSpans(t.Context()); err != nil {
		t.Fatal(err)
	}
	if stored, counting := rowsOf(t, srv, function, time.Now()); stored != 300 || counting != 150 {
		t.Fatalf("the spans after the records: %d failures stored, %d counting; want 300 stored and each call counted once", stored, counting)
	}
}

// assertVia fails unless every stored failure row of function is of via.
func assertVia(t *testing.T, srv *apptest.Server, function string, via circuit.Via) {
	t.Helper()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), time.Now().Add(-time.Minute), time.Now().Add(time.Second), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Circuit == demo.AppID+"/"+function && r.Via != via {
			t.Fatalf("a failure row of %s is of Via %d, want %d", function, r.Via, via)
		}
	}
}

func TestRecordsOfAFunctionWhoseSpansComeWaitForThemInEitherOrder(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	for _, recordsFirst := range []bool{true, false} {
		function := fmt.Sprintf("SpansAndRecords%v", recordsFirst)
		name := fmt.Sprintf("records first %v", recordsFirst)
		if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: function,
			Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
			t.Fatal(err)
		}
		waitKnown(t, srv, function)
		// The function's host sends both signals: ten calls make its spans
		// known, each counted once.
		usual := shapedHost(t, srv, demo.Shape{})
		run(t, usual, function, 10, false)
		waitCounted(t, srv, function, 0, 10)

		host, openSpans, openRecords := hostOver(t, srv, "http/protobuf", demo.Shape{})
		burst(host, function, 150)
		if recordsFirst {
			// Its spans are known: the records are outranked, and the
			// burst waits for its spans.
			openRecords()
			if err := host.FlushRecords(t.Context()); err != nil {
				t.Fatal(err)
			}
			if stored, _ := rowsOf(t, srv, function, time.Now()); stored != 0 {
				t.Fatalf("%s: %d failed records stored, though the function's spans come", name, stored)
			}
			srv.TickAfter(t, time.Now())
			assertState(t, srv, function, circuit.Closed, name+", its records alone")
			openSpans()
			if err := host.FlushSpans(t.Context()); err != nil {
				t.Fatal(err)
			}
		} else {
			openSpans()
			if err := host.FlushSpans(t.Context()); err != nil {
				t.Fatal(err)
			}
			waitCounted(t, srv, function, 150, 10)
			openRecords()
			if err := host.FlushRecords(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		waitCounted(t, srv, function, 150, 10) // each call once, whichever signal came first
		srv.WaitCircuit(t, demo.AppID, function, "open", func(c circuit.Circuit) bool { return c.State == circuit.Open })
	}
}
