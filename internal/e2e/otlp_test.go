package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// functionHost exports invocations the way the Functions host does, with
// the official OpenTelemetry SDK and its OTLP exporters: a span per
// invocation on the host's scope, named after the function, status ERROR
// when it failed, and the "Executed …" log record.
type functionHost struct {
	traces *sdktrace.TracerProvider
	logs   *sdklog.LoggerProvider
}

func newFunctionHost(t *testing.T, spans sdktrace.SpanExporter, records sdklog.Exporter) *functionHost {
	t.Helper()
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("func-orders-demo"), attribute.String("cloud.platform", "azure_functions"),
		semconv.ServiceInstanceID("host-instance-1"))
	h := &functionHost{traces: sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(spans))}
	if records != nil {
		h.logs = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(records)))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		_ = h.traces.Shutdown(ctx)
		if h.logs != nil {
			_ = h.logs.Shutdown(ctx)
		}
	})
	return h
}

// invoke records n invocations of function, failed or not, and exports
// them now.
func (h *functionHost) invoke(t *testing.T, function string, n int, failed bool) {
	t.Helper()
	tracer := h.traces.Tracer("Microsoft.Azure.WebJobs.Host")
	for i := range n {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", time.Now().UnixNano()&0xffffffff, i)
		start := time.Now()
		_, span := tracer.Start(t.Context(), function, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("faas.name", "Host.Functions."+function), attribute.String("faas.invocation_id", id)))
		status := "Succeeded"
		if failed {
			status = "Failed"
			span.SetStatus(codes.Error, "downstream store offline")
		}
		span.End()
		if h.logs != nil {
			var rec otellog.Record
			rec.SetTimestamp(time.Now())
			rec.SetSeverity(otellog.SeverityError)
			rec.SetBody(attribute.StringValue(fmt.Sprintf("Executed 'Functions.%s' (%s, Id=%s, Duration=%dms)", function, status, id, time.Since(start).Milliseconds())))
			h.logs.Logger("Function."+function).Emit(t.Context(), rec)
		}
	}
	if err := h.traces.ForceFlush(t.Context()); err != nil {
		t.Fatalf("the span exporter failed: %v", err)
	}
	if h.logs != nil {
		if err := h.logs.ForceFlush(t.Context()); err != nil {
			t.Fatalf("the log exporter failed: %v", err)
		}
	}
}

// waitOpen waits, on the real clock, until ProcessOrders is open and its
// trigger is off in local.settings.json, and says how long that took.
func waitOpen(t *testing.T, srv *apptest.Server, settings string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for {
		c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(settings)
		if c.State == circuit.Open && strings.Contains(string(b), `"AzureWebJobs.ProcessOrders.Disabled": "true"`) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("ProcessOrders not open within 20 s of the export: %s %q", c.State, c.Reason)
		}
		time.Sleep(20 * time.Millisecond) // poll, bounded by the deadline
	}
}

func seeded(t *testing.T) (*apptest.Server, string) {
	t.Helper()
	srv := apptest.StartRealClock(t, nil)
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	return srv, settings
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
	srv, settings := seeded(t)
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
	host.invoke(t, "ProcessOrders", 20, false)
	host.invoke(t, "ProcessOrders", 101, true)
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
	srv, settings := seeded(t)
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
	host.invoke(t, "ProcessOrders", 101, true)
	took := waitOpen(t, srv, settings)
	t.Logf("tripped %s after the HTTP export returned", took.Round(time.Millisecond))
	if f, _ := failuresCounted(t, srv); f != 101 {
		t.Errorf("counted %d failures, want 101", f)
	}
}

// TestAKeyThatDoesNotVerifyIsRefusedOverGRPC: the exporter is told
// Unauthenticated, and nothing is counted.
func TestAKeyThatDoesNotVerifyIsRefusedOverGRPC(t *testing.T) {
	srv, _ := seeded(t)
	spans, err := otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint(strings.TrimPrefix(srv.URL, "http://")), otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithHeaders(map[string]string{"authorization": "Bearer fbx_" + demo.AppID + "_not-the-key"}), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	host := newFunctionHost(t, spans, nil)
	tracer := host.traces.Tracer("Microsoft.Azure.WebJobs.Host")
	_, span := tracer.Start(t.Context(), "ProcessOrders")
	span.SetStatus(codes.Error, "x")
	span.End()
	err = host.traces.ForceFlush(t.Context())
	if err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
		t.Errorf("export with a forged key: %v, want Unauthenticated", err)
	}
	if f, _ := failuresCounted(t, srv); f != 0 {
		t.Errorf("a forged key's export counted %d failures", f)
	}
}
