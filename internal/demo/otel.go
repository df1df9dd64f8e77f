package demo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
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
	"go.opentelemetry.io/otel/trace"
)

// Telemetry reports the demo host's invocations the way the Functions
// host does with "telemetryMode": "OpenTelemetry": with the OpenTelemetry
// SDK's OTLP exporters, a span per invocation on the host's scope named
// after the function (status ERROR when it failed) and the host's
// "Executed 'Functions.<Name>' (…)" log record. No Fusebox code is
// involved: the two app settings are the endpoint and the key.
type Telemetry struct {
	traces *sdktrace.TracerProvider
	logs   *sdklog.LoggerProvider
	shape  Shape
}

// Shape is how a function app's telemetry is set up, for the cases that
// decide what Fusebox counts. The zero Shape is the host's default with
// "telemetryMode": "OpenTelemetry".
type Shape struct {
	// HideSucceeded is host.json's "logLevel": {"Function": "Warning"}:
	// the host exports the "Executed … (Failed …)" record (level Error)
	// but not the succeeded one (Information). Spans are not filtered.
	HideSucceeded bool
	// NoRecords is worker-side OpenTelemetry (the .NET isolated worker's
	// UseFunctionsWorkerDefaults with an exporter): the host then drops
	// every Function.* record, so only spans remain.
	NoRecords bool
	// NoSpans exports the records alone.
	NoSpans bool
	// NoSpanStatus is a host built before September 2025: its span of a
	// failed invocation has no ERROR status.
	NoSpanStatus bool
	// WorkerSpans adds the .NET worker's own span of each invocation
	// (schema 1.37: "function <Name>", faas.invocation_id, status ERROR).
	WorkerSpans bool
}

// NewTelemetry exports to Fusebox at base (its dashboard's URL) with the
// app's key, over protocol "grpc" or "http/protobuf", in batches sent
// every second (the host's default is 5 s).
func NewTelemetry(ctx context.Context, base, key, protocol string) (*Telemetry, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("demo telemetry: %q is not Fusebox's URL", base)
	}
	auth := map[string]string{"authorization": "Bearer " + key}
	var spans sdktrace.SpanExporter
	var records sdklog.Exporter
	switch protocol {
	case "grpc":
		if spans, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(u.Host), otlptracegrpc.WithInsecure(), otlptracegrpc.WithHeaders(auth)); err != nil {
			return nil, err
		}
		records, err = otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(u.Host), otlploggrpc.WithInsecure(), otlploggrpc.WithHeaders(auth))
	case "http/protobuf":
		if spans, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(base+"/v1/traces"), otlptracehttp.WithHeaders(auth)); err != nil {
			return nil, err
		}
		records, err = otlploghttp.New(ctx, otlploghttp.WithEndpointURL(base+"/v1/logs"), otlploghttp.WithHeaders(auth))
	default:
		return nil, fmt.Errorf("demo telemetry: protocol %q: use grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, err
	}
	return NewTelemetryWith(spans, records), nil
}

// NewTelemetryWith reports through the given exporters, batched every
// second: for tests that choose endpoints, paths and compression.
func NewTelemetryWith(spans sdktrace.SpanExporter, records sdklog.Exporter) *Telemetry {
	return NewTelemetryShaped(spans, records, Shape{})
}

// NewTelemetryShaped reports as a host set up as shape says.
func NewTelemetryShaped(spans sdktrace.SpanExporter, records sdklog.Exporter, shape Shape) *Telemetry {
	res := resource.NewSchemaless(attribute.String("service.name", "func-orders-demo"), attribute.String("cloud.platform", "azure_functions"),
		attribute.String("service.instance.id", "demo-host"))
	return &Telemetry{
		traces: sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(spans, sdktrace.WithBatchTimeout(time.Second))),
		logs: sdklog.NewLoggerProvider(sdklog.WithResource(res),
			sdklog.WithProcessor(sdklog.NewBatchProcessor(records, sdklog.WithExportInterval(time.Second)))),
		shape: shape,
	}
}

// Failures records one failed invocation (the batch of n events failed).
func (t *Telemetry) Failures(function string, _ int, at time.Time, sample string) {
	t.invocation(function, at, sample)
}

// Successes records one successful invocation.
func (t *Telemetry) Successes(function string, _ int, at time.Time) { t.invocation(function, at, "") }

func (t *Telemetry) invocation(function string, at time.Time, failure string) {
	id := rand.Text()
	ctx := context.Background()
	status := "Succeeded"
	if failure != "" {
		status = "Failed"
	}
	if !t.shape.NoSpans {
		_, span := t.traces.Tracer("Microsoft.Azure.WebJobs.Host").Start(ctx, function, trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("faas.name", "Host.Functions."+function), attribute.String("faas.invocation_id", id)))
		if failure != "" && !t.shape.NoSpanStatus {
			span.SetStatus(codes.Error, failure)
		}
		span.End(trace.WithTimestamp(at))
	}
	if t.shape.WorkerSpans {
		_, span := t.traces.Tracer("Microsoft.Azure.Functions.Worker").Start(ctx, "function "+function, trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("faas.name", function), attribute.String("faas.invocation_id", id)))
		if failure != "" {
			span.SetStatus(codes.Error, failure)
		}
		span.End(trace.WithTimestamp(at))
	}
	if t.shape.NoRecords || t.shape.HideSucceeded && failure == "" {
		return
	}
	var rec otellog.Record
	rec.SetTimestamp(at)
	rec.SetSeverity(otellog.SeverityInfo)
	if failure != "" {
		rec.SetSeverity(otellog.SeverityError)
	}
	rec.SetBody(attribute.StringValue(fmt.Sprintf("Executed 'Functions.%s' (%s, Id=%s, Duration=1ms)", function, status, id)))
	t.logs.Logger("Function."+function).Emit(ctx, rec)
}

// Flush exports what was recorded now, instead of at the next batch.
func (t *Telemetry) Flush(ctx context.Context) error {
	return errors.Join(t.traces.ForceFlush(ctx), t.logs.ForceFlush(ctx))
}

// FlushSpans exports the spans recorded, and no log record.
func (t *Telemetry) FlushSpans(ctx context.Context) error { return t.traces.ForceFlush(ctx) }

// FlushRecords exports the log records recorded, and no span: a host's
// logs go every second and its spans every 5 s, so either may come first.
func (t *Telemetry) FlushRecords(ctx context.Context) error { return t.logs.ForceFlush(ctx) }

// Shutdown sends what is left.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.traces.Shutdown(ctx), t.logs.Shutdown(ctx))
}
