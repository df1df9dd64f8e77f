package e2e_test

import (
	"context"
	"strings"
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

// newFunctionHost reports invocations as the Functions host exports them
// (demo.Telemetry: a span per invocation on the host's scope, status ERROR
// when it failed, and the "Executed …" log record) through the official
// SDK exporters given.
func newFunctionHost(t *testing.T, spans sdktrace.SpanExporter, records sdklog.Exporter) *demo.Telemetry {
	t.Helper()
	h := demo.NewTelemetryWith(spans, records)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	return h
}

// invoke records n invocations of ProcessOrders, failed or not, and
// exports them now.
func invoke(t *testing.T, h *demo.Telemetry, n int, failed bool) {
	t.Helper()
	for range n {
		if failed {
			h.Failures("ProcessOrders", 1, time.Now(), "downstream store offline")
		} else {
			h.Successes("ProcessOrders", 1, time.Now())
		}
	}
	if err := h.Flush(t.Context()); err != nil {
		t.Fatalf("the exporters failed: %v", err)
	}
}

// waitOpen waits, on the real clock, until ProcessOrders' trigger is off
// in local.settings.json and its circuit open, and says how long that took.
func waitOpen(t *testing.T, srv *apptest.Server, settings string) time.Duration {
	t.Helper()
	start := time.Now()
	off := testenv.WaitForFile(t, settings, `"AzureWebJobs.ProcessOrders.Disabled": "true"`, 20*time.Second)
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	if c.State != circuit.Open {
		t.Fatalf("the trigger is off but ProcessOrders is %s: %q", c.State, c.Reason)
	}
	return off.Sub(start)
}

// failuresCounted adds up ProcessOrders' failure rows of the last minute.
func failuresCounted(t *testing.T, srv *apptest.Server) (failures, successes int) {
	t.Helper()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), time.Now().Add(-time.Minute), time.Now().Add(time.Second), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Circuit == demo.AppID+"/ProcessOrders" {
			failures += r.Count
			successes += r.Successes
		}
	}
	return failures, successes
}

// TestTheHostsOwnExportTripsTheBreakerOverGRPC: a function app with two
// app settings and no code exports over OTLP/gRPC (the host's default) to
// Fusebox's own port (spans gzipped); 101 failed invocations in ProcessOrders' 30 s window
// (threshold 100) switch its trigger off.
func TestTheHostsOwnExportTripsTheBreakerOverGRPC(t *testing.T) {
	t.Parallel()
	srv, settings := apptest.SeededRealClock(t)
	endpoint := strings.TrimPrefix(srv.URL, "http://")
	headers := map[string]string{"authorization": "Bearer " + demo.Key}
	spans, err := otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure(), otlptracegrpc.WithHeaders(headers),
		otlptracegrpc.WithCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	records, err := otlploggrpc.New(t.Context(), otlploggrpc.WithEndpoint(endpoint), otlploggrpc.WithInsecure(), otlploggrpc.WithHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	host := newFunctionHost(t, spans, records)
	invoke(t, host, 20, false)
	invoke(t, host, 101, true)
	took := waitOpen(t, srv, settings)
	t.Logf("tripped %s after the gRPC export returned", took.Round(time.Millisecond))
	// Each invocation went as a span and as a log record: counted once.
	if f, s := failuresCounted(t, srv); f != 101 || s != 20 {
		t.Errorf("counted %d failures and %d successes, want 101 and 20 (each invocation once)", f, s)
	}
}

// TestTheHostsOwnExportTripsTheBreakerOverHTTP: the same with
// OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf: spans gzipped under the
// /otlp prefix, log records at the root.
func TestTheHostsOwnExportTripsTheBreakerOverHTTP(t *testing.T) {
	t.Parallel()
	srv, settings := apptest.SeededRealClock(t)
	spans, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+"/otlp/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + demo.Key}), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	records, err := otlploghttp.New(t.Context(), otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"),
		otlploghttp.WithHeaders(map[string]string{"Authorization": "Bearer " + demo.Key}))
	if err != nil {
		t.Fatal(err)
	}
	host := newFunctionHost(t, spans, records)
	invoke(t, host, 101, true)
	took := waitOpen(t, srv, settings)
	t.Logf("tripped %s after the HTTP export returned", took.Round(time.Millisecond))
	if f, _ := failuresCounted(t, srv); f != 101 {
		t.Errorf("counted %d failures, want 101", f)
	}
}

// TestAKeyThatDoesNotVerifyIsRefusedOverGRPC: the exporter is told
// Unauthenticated, and nothing is counted.
func TestAKeyThatDoesNotVerifyIsRefusedOverGRPC(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	endpoint := strings.TrimPrefix(srv.URL, "http://")
	forged := map[string]string{"authorization": "Bearer fbx_" + demo.AppID + "_not-the-key"}
	spans, err := otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithHeaders(forged), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	records, err := otlploggrpc.New(t.Context(), otlploggrpc.WithEndpoint(endpoint), otlploggrpc.WithInsecure(),
		otlploggrpc.WithHeaders(forged), otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	host := newFunctionHost(t, spans, records)
	host.Failures("ProcessOrders", 1, time.Now(), "x")
	if err := host.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
		t.Errorf("export with a forged key: %v, want Unauthenticated", err)
	}
	if f, _ := failuresCounted(t, srv); f != 0 {
		t.Errorf("a forged key's export counted %d failures", f)
	}
}
