package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// WithTraceIDs wraps h so that a line logged with a context that carries
// a span (a request's, a loop pass's) says trace_id and span_id: a slow
// request found in the logs is then one search away in the traces.
func WithTraceIDs(h slog.Handler) slog.Handler {
	if _, ok := h.(traceIDs); ok {
		return h
	}
	return traceIDs{h}
}

type traceIDs struct{ slog.Handler }

func (h traceIDs) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceIDs{h.Handler.WithAttrs(attrs)}
}

func (h traceIDs) WithGroup(name string) slog.Handler {
	return traceIDs{h.Handler.WithGroup(name)}
}
