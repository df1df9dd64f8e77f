package e2e_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// These tests are the host set-ups that decide which signal counts a
// function (otlp.Signal): each exports through the official SDK's OTLP
// exporters to a Fusebox on the real clock.

// shapedHost exports to srv as a host set up as shape says.
func shapedHost(t *testing.T, srv *apptest.Server, shape demo.Shape) *demo.Telemetry {
	t.Helper()
	return hostWithKey(t, srv, demo.Key, shape)
}

// hostWithKey exports to srv with an app's key, as a host set up as shape
// says.
func hostWithKey(t *testing.T, srv *apptest.Server, key string, shape demo.Shape) *demo.Telemetry {
	t.Helper()
	auth := map[string]string{"Authorization": "Bearer " + key}
	spans, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"), otlptracehttp.WithHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	records, err := otlploghttp.New(t.Context(), otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"), otlploghttp.WithHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	h := demo.NewTelemetryShaped(spans, records, shape)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	return h
}

// run records n invocations of function, every tenth failed when
// tenthFails, and exports them now.
func run(t *testing.T, h *demo.Telemetry, function string, n int, tenthFails bool) {
	t.Helper()
	now := time.Now()
	for i := range n {
		if tenthFails && i%10 == 0 {
			h.Failures(function, 1, now, "timeout")
		} else {
			h.Successes(function, 1, now)
		}
	}
	if err := h.Flush(t.Context()); err != nil {
		t.Fatalf("the exporters failed: %v", err)
	}
}

// countedOf adds up function's failure rows of the last minute.
func countedOf(t *testing.T, srv *apptest.Server, function string) (failures, successes int) {
	t.Helper()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), time.Now().Add(-time.Minute), time.Now().Add(time.Second), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Circuit == demo.AppID+"/"+function {
			failures += r.Count
			successes += r.Successes
		}
	}
	return failures, successes
}

// waitCounted waits until function's rows hold failures and successes,
// and fails with what they hold after 20 s.
func waitCounted(t *testing.T, srv *apptest.Server, function string, failures, successes int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		f, s := countedOf(t, srv, function)
		if f == failures && s == successes {
			return
		}
		if f > failures || s > successes || time.Now().After(deadline) {
			t.Fatalf("%s counted %d failures and %d successes, want %d and %d (each invocation once)", function, f, s, failures, successes)
		}
		time.Sleep(20 * time.Millisecond) // polls rows, bounded by the deadline
	}
}

// TestALogLevelThatHidesSucceededRecordsTripsNoRatioRule: with host.json's
// "logLevel": {"Function": "Warning"} the host exports the Executed record
// of each failed invocation and none of the succeeded ones, while its
// spans cover all of them. 2,000 invocations with 10 % failures are 10 %
// against a 50 % rule, not "100 % of 200 calls".
func TestALogLevelThatHidesSucceededRecordsTripsNoRatioRule(t *testing.T) {
	srv, _ := apptest.SeededRealClock(t)
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	c.Window, c.Rule = time.Minute, circuit.Rule{Ratio: 0.5, MinCalls: 100}
	if err := srv.App.Store.Circuits.Put(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	host := shapedHost(t, srv, demo.Shape{HideSucceeded: true})
	run(t, host, "ProcessOrders", 2000, true)
	waitCounted(t, srv, "ProcessOrders", 200, 1800)
	srv.TickAfter(t, time.Now())
	got, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != circuit.Closed {
		t.Fatalf("10 %% failures tripped a 50 %% rule: %s %q", got.State, got.Reason)
	}
}

// TestAFunctionReportedBySpansAloneTripsInAnAppThatSendsRecords: one
// function of the app has worker-side OpenTelemetry (the host drops its
// records, only spans remain), another sends records as usual; the first
// is counted and trips.
func TestAFunctionReportedBySpansAloneTripsInAnAppThatSendsRecords(t *testing.T) {
	srv, settings := apptest.SeededRealClock(t)
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: "ScoreLeads", Threshold: 1000, Window: time.Minute, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	usual := shapedHost(t, srv, demo.Shape{NoSpans: true})
	run(t, usual, "ScoreLeads", 20, true)
	waitCounted(t, srv, "ScoreLeads", 2, 18)
	spansOnly := shapedHost(t, srv, demo.Shape{NoRecords: true})
	run(t, spansOnly, "ProcessOrders", 101, false)
	waitCounted(t, srv, "ProcessOrders", 0, 101)
	for range 101 {
		spansOnly.Failures("ProcessOrders", 1, time.Now(), "downstream store offline")
	}
	if err := spansOnly.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	took := waitOpen(t, srv, settings)
	t.Logf("tripped %s after the spans were exported", took.Round(time.Millisecond))
}

// TestTheHostsAndTheWorkersSpanOfOneInvocationCountOnce: with the .NET
// worker exporting its own span beside the host's (same invocation id) and
// no records, each invocation counts once.
func TestTheHostsAndTheWorkersSpanOfOneInvocationCountOnce(t *testing.T) {
	srv, _ := apptest.SeededRealClock(t)
	host := shapedHost(t, srv, demo.Shape{NoRecords: true, WorkerSpans: true})
	run(t, host, "ProcessOrders", 50, true)
	waitCounted(t, srv, "ProcessOrders", 5, 45)
}

// TestAnOlderHostsSpansThatMissFailuresStillTrip: a host built before
// September 2025 sets no ERROR status on a failed invocation's span; its
// Executed records say which failed, and they count the function.
func TestAnOlderHostsSpansThatMissFailuresStillTrip(t *testing.T) {
	srv, settings := apptest.SeededRealClock(t)
	host := shapedHost(t, srv, demo.Shape{NoSpanStatus: true})
	run(t, host, "ProcessOrders", 20, false)
	for range 101 {
		host.Failures("ProcessOrders", 1, time.Now(), "downstream store offline")
	}
	if err := host.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitOpen(t, srv, settings)
	if f, _ := countedOf(t, srv, "ProcessOrders"); f != 101 {
		t.Errorf("counted %d failures, want 101", f)
	}
}
