// Package telemetry sends traces over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, honouring the standard OTEL_* variables; without it, tracing is off
// and costs nothing. Export is asynchronous and bounded (a batch processor
// with a fixed queue that drops when full), so an unreachable collector
// never slows a request.
//
// It also adapts OpenTelemetry to the Azure SDK's tracing interface, so
// calls to Table Storage and to ARM are spans of the request or tick that
// made them.
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of Fusebox's own spans.
const Name = "github.com/fusebox/fusebox"

// Tracer is Fusebox's tracer: a no-op until Setup installs a provider.
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// Setup installs the OTLP exporter when the environment asks for one and
// returns the function that flushes and stops it. getenv reads variables.
func Setup(ctx context.Context, getenv func(string) string, version string, log *slog.Logger) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	name := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	if endpoint == "" {
		endpoint, name = getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	if endpoint == "" || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return func(context.Context) error { return nil }, nil
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: give the collector's URL, such as http://localhost:4318 (OTLP over HTTP)", name, endpoint)
	}
	if p := getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: Fusebox exports OTLP over HTTP only; use http/protobuf", p)
	}
	// The exporter reads headers, timeout and TLS settings from the
	// standard variables itself; the endpoint is given as read here.
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(strings.TrimRight(endpoint, "/") + "/v1/traces")}
	if name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" {
		opts[0] = otlptracehttp.WithEndpointURL(endpoint) // the full URL, as the spec says
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "fusebox"), attribute.String("service.version", version)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	// OTEL_BSP_* and OTEL_SERVICE_NAME are honoured by the SDK; these are
	// the bounds when they are not set.
	batch := []sdktrace.BatchSpanProcessorOption{sdktrace.WithMaxQueueSize(4096)}
	if v := getenv("OTEL_BSP_SCHEDULE_DELAY"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 1 {
			return nil, fmt.Errorf("OTEL_BSP_SCHEDULE_DELAY=%q: give milliseconds, such as 5000", v)
		}
		batch = append(batch, sdktrace.WithBatchTimeout(time.Duration(ms)*time.Millisecond))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp, batch...))
	otel.SetTracerProvider(tp)
	// A collector that cannot be reached costs a warning, at most one a minute.
	var last atomic.Int64
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if now := time.Now().Unix(); now-last.Load() >= 60 {
			last.Store(now)
			log.Warn("traces could not be exported", "error", err)
		}
	}))
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return tp.Shutdown(ctx)
	}, nil
}

// AzureProvider is the Azure SDK's tracing provider backed by the installed
// OpenTelemetry provider (looked up per span, so Setup may come later).
func AzureProvider() tracing.Provider {
	return tracing.NewProvider(func(module, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, spanName string, opts *tracing.SpanOptions) (context.Context, tracing.Span) {
			var kind trace.SpanKind = trace.SpanKindInternal
			var attrs []attribute.KeyValue
			if opts != nil {
				kind = trace.SpanKind(opts.Kind)
				attrs = convert(opts.Attributes)
			}
			ctx, span := otel.Tracer(module, trace.WithInstrumentationVersion(version)).Start(ctx, spanName, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
			return ctx, tracing.NewSpan(tracing.SpanImpl{
				End:           func() { span.End() },
				SetAttributes: func(a ...tracing.Attribute) { span.SetAttributes(convert(a)...) },
				AddEvent:      func(n string, a ...tracing.Attribute) { span.AddEvent(n, trace.WithAttributes(convert(a)...)) },
				SetStatus: func(code tracing.SpanStatus, desc string) {
					switch code {
					case tracing.SpanStatusError:
						span.SetStatus(codes.Error, desc)
					case tracing.SpanStatusOK:
						span.SetStatus(codes.Ok, desc)
					}
				},
			})
		}, &tracing.TracerOptions{SpanFromContext: func(ctx context.Context) tracing.Span {
			span := trace.SpanFromContext(ctx)
			return tracing.NewSpan(tracing.SpanImpl{End: func() { span.End() }})
		}})
	}, nil)
}

func convert(attrs []tracing.Attribute) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		switch v := a.Value.(type) {
		case string:
			out = append(out, attribute.String(a.Key, v))
		case int:
			out = append(out, attribute.Int(a.Key, v))
		case int64:
			out = append(out, attribute.Int64(a.Key, v))
		case float64:
			out = append(out, attribute.Float64(a.Key, v))
		case bool:
			out = append(out, attribute.Bool(a.Key, v))
		default:
			out = append(out, attribute.String(a.Key, fmt.Sprint(v)))
		}
	}
	return out
}

// TraceParent is the W3C traceparent of the span in ctx, or "".
func TraceParent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// WithRemoteParent returns ctx carrying the span that a stored traceparent
// names, so a span started from it joins that trace. A malformed value is
// ignored.
func WithRemoteParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
