package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
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

// countedOf adds up function's failure rows of the last minute, as they
// count once the records among them have waited their grace for spans
// (circuit.Countable): each invocation once, whichever signal came first.
func countedOf(t *testing.T, srv *apptest.Server, function string) (failures, successes int) {
	t.Helper()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), time.Now().Add(-time.Minute), time.Now().Add(time.Second), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range circuit.Countable(rows, time.Now().Add(circuit.RecordsGrace)) {
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
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		f, s := countedOf(t, srv, function)
		msg := fmt.Sprintf("%s counted %d failures and %d successes, want %d and %d (each invocation once)", function, f, s, failures, successes)
		if f > failures || s > successes {
			t.Fatal(msg)
		}
		return f == failures && s == successes, msg
	})
}

// TestALogLevelThatHidesSucceededRecordsTripsNoRatioRule: with host.json's
// "logLevel": {"Function": "Warning"} the host exports the Executed record
// of each failed invocation and none of the succeeded ones, while its
// spans cover all of them. 2,000 invocations with 10 % failures are 10 %
// against a 50 % rule, not "100 % of 200 calls".
func TestALogLevelThatHidesSucceededRecordsTripsNoRatioRule(t *testing.T) {
	t.Parallel()
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

// TestTheLogLevelCaseInEveryOrder: with "Function": "Warning" the host's
// logs (every second) usually reach Fusebox before its spans (every 5 s).
// A new function failing 10 % of its calls must not trip a 50 % rule
// whichever signal comes first, over HTTP or gRPC, in one export each or
// in several (the SDKs send 512 at most): the records of failures alone
// once read "100 % of 169 calls". The evaluator ticks while only the
// records are stored, and again after the spans.
func TestTheLogLevelCaseInEveryOrder(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	cases := []struct {
		protocol     string
		recordsFirst bool
		calls        int
	}{
		{"http/protobuf", true, 2000}, {"http/protobuf", false, 2000}, {"http/protobuf", true, 400}, {"http/protobuf", false, 400},
		{"grpc", true, 2000}, {"grpc", false, 2000}, {"grpc", true, 400}, {"grpc", false, 400},
	}
	for i, tc := range cases {
		function := fmt.Sprintf("NewFunction%d", i)
		name := fmt.Sprintf("%s, %d calls, records first %v", tc.protocol, tc.calls, tc.recordsFirst)
		ci := circuit.Circuit{AppID: demo.AppID, Function: function, Settings: circuit.Settings{Threshold: 100_000, Window: time.Minute, Rule: circuit.Rule{Ratio: 0.5, MinCalls: tc.calls / 20}}, State: circuit.Closed}
		if err := srv.App.Store.Circuits.Put(t.Context(), ci); err != nil {
			t.Fatal(err)
		}
		host, openSpans, openRecords := hostOver(t, srv, tc.protocol, demo.Shape{HideSucceeded: true})
		waitKnown(t, srv, function)
		now := time.Now()
		for j := range tc.calls {
			if j%10 == 0 {
				host.Failures(function, 1, now, "timeout")
			} else {
				host.Successes(function, 1, now)
			}
		}
		open, first, openSecond, second := openSpans, host.FlushSpans, openRecords, host.FlushRecords
		if tc.recordsFirst {
			open, first, openSecond, second = openRecords, host.FlushRecords, openSpans, host.FlushSpans
		}
		open()
		if err := first(t.Context()); err != nil {
			t.Fatal(err)
		}
		if tc.recordsFirst {
			waitCounted(t, srv, function, tc.calls/10, 0) // the records alone are stored
		}
		srv.TickAfter(t, time.Now())
		assertClosed(t, srv, function, name+", the first signal alone")
		openSecond()
		if err := second(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitCounted(t, srv, function, tc.calls/10, tc.calls-tc.calls/10)
		srv.TickAfter(t, time.Now())
		assertClosed(t, srv, function, name+", both signals")
	}
}

// waitKnown waits until ingest knows function's new circuit (it lists
// circuits at most every 2 s): a report of one success half an hour ago,
// outside every window the test reads, is answered with no_circuit 0.
func waitKnown(t *testing.T, srv *apptest.Server, function string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		body := fmt.Sprintf(`{"failures": [{"function": %q, "successes": 1, "at": %q}]}`, function, time.Now().Add(-30*time.Minute).UTC().Format(time.RFC3339))
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+demo.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res struct {
			NoCircuit int `json:"no_circuit"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("report: %d, %v", resp.StatusCode, err)
		}
		return res.NoCircuit == 0, "ingest does not know " + function + "'s circuit"
	})
}

// hostOver is a host set up as shape says, exporting to srv with the
// demo's key over protocol, whose spans and records wait at gates: each
// signal is sent once its gate opens, so a test decides which comes first.
func hostOver(t *testing.T, srv *apptest.Server, protocol string, shape demo.Shape) (h *demo.Telemetry, openSpans, openRecords func()) {
	t.Helper()
	var spans sdktrace.SpanExporter
	var records sdklog.Exporter
	var err error
	auth := map[string]string{"authorization": "Bearer " + demo.Key}
	if protocol == "grpc" {
		endpoint := strings.TrimPrefix(srv.URL, "http://")
		if spans, err = otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure(), otlptracegrpc.WithHeaders(auth)); err == nil {
			records, err = otlploggrpc.New(t.Context(), otlploggrpc.WithEndpoint(endpoint), otlploggrpc.WithInsecure(), otlploggrpc.WithHeaders(auth))
		}
	} else {
		if spans, err = otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"), otlptracehttp.WithHeaders(auth)); err == nil {
			records, err = otlploghttp.New(t.Context(), otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"), otlploghttp.WithHeaders(auth))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	gs := gatedSpans{spans, make(chan struct{})}
	gr := gatedRecords{records, make(chan struct{})}
	h = demo.NewTelemetryShaped(gs, gr, shape)
	var once [2]sync.Once
	openSpans = func() { once[0].Do(func() { close(gs.open) }) }
	openRecords = func() { once[1].Do(func() { close(gr.open) }) }
	t.Cleanup(func() {
		openSpans()
		openRecords()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	return h, openSpans, openRecords
}

// gatedSpans exports once open is closed.
type gatedSpans struct {
	sdktrace.SpanExporter
	open chan struct{}
}

func (g gatedSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.SpanExporter.ExportSpans(ctx, spans)
}

// gatedRecords exports once open is closed.
type gatedRecords struct {
	sdklog.Exporter
	open chan struct{}
}

func (g gatedRecords) Export(ctx context.Context, records []sdklog.Record) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Exporter.Export(ctx, records)
}

// assertClosed fails when function's circuit is not closed.
func assertClosed(t *testing.T, srv *apptest.Server, function, when string) {
	t.Helper()
	got, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, function)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != circuit.Closed {
		t.Fatalf("%s: 10 %% failures tripped a 50 %% rule: %s %q", when, got.State, got.Reason)
	}
}

// TestAFunctionReportedBySpansAloneTripsInAnAppThatSendsRecords: one
// function of the app has worker-side OpenTelemetry (the host drops its
// records, only spans remain), another sends records as usual; the first
// is counted and trips.
func TestAFunctionReportedBySpansAloneTripsInAnAppThatSendsRecords(t *testing.T) {
	t.Parallel()
	srv, settings := apptest.SeededRealClock(t)
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: "ScoreLeads", Settings: circuit.Settings{Threshold: 1000, Window: time.Minute}, State: circuit.Closed}); err != nil {
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
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	host := shapedHost(t, srv, demo.Shape{NoRecords: true, WorkerSpans: true})
	run(t, host, "ProcessOrders", 50, true)
	waitCounted(t, srv, "ProcessOrders", 5, 45)
}

// TestAnOlderHostsSpansThatMissFailuresStillTrip: a host built before
// September 2025 sets no ERROR status on a failed invocation's span; its
// Executed records say which failed, and they count the function.
func TestAnOlderHostsSpansThatMissFailuresStillTrip(t *testing.T) {
	t.Parallel()
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
