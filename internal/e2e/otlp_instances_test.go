package e2e_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A host's trace and log exporters are two clients: behind a load balancer
// their exports reach different Fusebox instances. These tests send the
// spans to one instance and the records of the same invocations to
// another, on the real clock, and check each invocation counts once.

// twoInstances starts the seeded Fusebox and a second instance on the
// same tables.
func twoInstances(t *testing.T) (a, b *apptest.Server) {
	t.Helper()
	a, _ = apptest.SeededRealClock(t)
	b = apptest.StartRealClock(t, map[string]string{"FUSEBOX_TABLE_PREFIX": a.Config.Storage.TablePrefix})
	return a, b
}

// waitSpansShared waits until a's arrivals, written to the table every
// 5 s, say that spans tell of function: what the other instances read.
func waitSpansShared(t *testing.T, a *apptest.Server, function string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		rows, err := a.App.Store.Arrivals.ArrivalsOf(t.Context(), demo.AppID, time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if sig, ok := r.Functions[function]; ok && sig == otlp.HostSpan {
				return true, ""
			}
		}
		return false, "no arrival row says spans tell of " + function
	})
}

// TestRecordsOnAnotherInstanceDoNotCountWhatSpansCounted: 50 invocations,
// one in ten failed; their spans reach instance A, then their Executed
// records reach instance B. B reads which functions the others hear spans
// of and leaves the records uncounted: 5 failures and 45 successes, not
// twice that.
func TestRecordsOnAnotherInstanceDoNotCountWhatSpansCounted(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	spans := shapedHost(t, a, demo.Shape{NoRecords: true})
	run(t, spans, "ProcessOrders", 50, true)
	waitCounted(t, a, "ProcessOrders", 5, 45)
	waitSpansShared(t, a, "ProcessOrders")
	records := shapedHost(t, b, demo.Shape{NoSpans: true})
	run(t, records, "ProcessOrders", 50, true) // answered: B has taken them
	if f, s := countedOf(t, a, "ProcessOrders"); f != 5 || s != 45 {
		t.Fatalf("with records on another instance: %d failures and %d successes, want 5 and 45 (each invocation once)", f, s)
	}
}

// TestTheLogLevelCaseAcrossInstances: with "Function": "Warning" only the
// failed invocations' records are exported, and they reach instance B
// while the spans of all 2,000 reach A: 10 % failures stay 10 %.
func TestTheLogLevelCaseAcrossInstances(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	spans := shapedHost(t, a, demo.Shape{NoRecords: true})
	run(t, spans, "ProcessOrders", 2000, true)
	waitCounted(t, a, "ProcessOrders", 200, 1800)
	waitSpansShared(t, a, "ProcessOrders")
	records := shapedHost(t, b, demo.Shape{NoSpans: true, HideSucceeded: true})
	run(t, records, "ProcessOrders", 2000, true)
	if f, s := countedOf(t, a, "ProcessOrders"); f != 200 || s != 1800 {
		t.Fatalf("failed records on another instance: %d failures and %d successes, want 200 and 1800", f, s)
	}
}
