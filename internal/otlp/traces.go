package otlp

import (
	"encoding/hex"
	"strconv"
	"strings"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// scope is what an instrumentation scope says of its spans.
type scope int

const (
	otherScope     scope = iota
	webJobsScope         // the host's own invocation spans: timer, queue, blob…
	processorScope       // the Event Hubs and Service Bus SDKs' processing spans
	httpScope            // ASP.NET Core's request spans (HTTP triggers)
	workerScope          // the .NET isolated worker's own invocation span
)

func scopeOf(name string) scope {
	switch {
	case strings.HasPrefix(name, "Microsoft.Azure.WebJobs"):
		return webJobsScope
	case name == "Azure.Messaging.EventHubs.EventProcessor", name == "Azure.Messaging.ServiceBus.ServiceBusProcessor":
		return processorScope
	case name == "Microsoft.AspNetCore":
		return httpScope
	case name == "Microsoft.Azure.Functions.Worker":
		return workerScope
	}
	return otherScope
}

// Why an invocation span names no function Fusebox trusts.
const (
	WhyConflicting = "faas.name or faas.invocation_id given twice with different values"
	WhyHTTP        = "HTTP request span without faas.name: the route alone does not say which function ran"
	WhyProcessor   = "Event Hubs or Service Bus processing span without faas.name"
	WhyName        = "faas.name is not a function name"
	WhyNoTime      = "no time"
	WhyWorker      = "the .NET worker's 'Invoke' span (OpenTelemetry schema 1.17) names no function; the host's span or record of the same invocation counts it"
)

// FromTraces finds the invocations among an export's spans. A span is an
// invocation when it carries faas.name or faas.invocation_id (out-of-process
// workers add them) or comes from a scope that traces invocations; other
// spans (dependencies, the function's own) are not invocations.
func FromTraces(req *coltracepb.ExportTraceServiceRequest) Mapped {
	m := Mapped{Source: Traces}
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	m.Invocations = make([]Invocation, 0, n)
	for _, rs := range req.GetResourceSpans() {
		m.serviceName(rs.GetResource())
		instance, _ := attr(rs.GetResource().GetAttributes(), "service.instance.id")
		for _, ss := range rs.GetScopeSpans() {
			kind := scopeOf(ss.GetScope().GetName())
			for _, span := range ss.GetSpans() {
				m.Records++
				inv, why, ok := fromSpan(span, kind)
				m.add(inv, why, ok, instance)
			}
		}
	}
	return m
}

// fromSpan reads one span: ok is false for a span that is no invocation;
// why says why an invocation names no function.
func fromSpan(span *tracepb.Span, kind scope) (inv Invocation, why string, ok bool) {
	attrs := span.GetAttributes()
	faasName, dupName := attr(attrs, "faas.name")
	id, dupID := attr(attrs, "faas.invocation_id")
	if id != "" && !validID(id) {
		return Invocation{}, WhyLongID, true
	}
	if id == "" {
		// The older convention's name; an older WebJobs SDK put the
		// trigger's reason there, which is no id.
		if id, dupID = attr(attrs, "faas.execution"); !validID(id) {
			id = ""
		}
	}
	switch {
	case faasName == "" && id == "" && (kind == otherScope || kind == workerScope):
		return Invocation{}, "", false
	case kind == httpScope && span.GetKind() != tracepb.Span_SPAN_KIND_SERVER:
		return Invocation{}, "", false
	case dupName || dupID:
		return Invocation{}, WhyConflicting, true
	}
	name, named := functionName(faasName)
	if !named && kind == webJobsScope {
		// The host names its span after the function; its faas.name may
		// be the method's full name.
		name, named = functionName(span.GetName())
	}
	if !named && kind == workerScope && faasName == "" {
		// Schema 1.37 names the span "function <Name>"; 1.17's "Invoke"
		// says only the invocation id.
		if n, ok := strings.CutPrefix(span.GetName(), "function "); ok {
			name, named = functionName(n)
		} else {
			return Invocation{}, WhyWorker, true
		}
	}
	if !named {
		switch {
		case faasName != "":
			return Invocation{}, WhyName, true
		case kind == httpScope:
			return Invocation{}, WhyHTTP, true
		case kind == processorScope:
			return Invocation{}, WhyProcessor, true
		}
		return Invocation{}, WhyName, true
	}
	at := unixNano(span.GetEndTimeUnixNano())
	if at.IsZero() {
		at = unixNano(span.GetStartTimeUnixNano())
	}
	if at.IsZero() {
		return Invocation{}, WhyNoTime, true
	}
	if id == "" && len(span.GetSpanId()) > 0 {
		id = "span:" + hex.EncodeToString(span.GetSpanId())
	}
	inv = Invocation{Function: name, ID: id, At: at, Start: unixNano(span.GetStartTimeUnixNano()), Failed: spanFailed(span, kind), Signal: HostSpan}
	if kind == workerScope || kind == otherScope {
		inv.Signal = WorkerSpan
	}
	inv.Instance, _ = attr(attrs, "faas.instance")
	if inv.Failed {
		inv.Sample = cut(span.GetStatus().GetMessage(), 300)
		inv.Trace = traceParent(span.GetTraceId(), span.GetSpanId())
	}
	return inv, "", true
}

// traceParent is the W3C traceparent of a span's ids; "" unless both are
// of their size and not all zero, as W3C requires.
func traceParent(trace, span []byte) string {
	if len(trace) != 16 || len(span) != 8 || allZero(trace) || allZero(span) {
		return ""
	}
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], trace)
	b[35] = '-'
	hex.Encode(b[36:52], span)
	copy(b[52:], "-01")
	return string(b[:])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// spanFailed: status ERROR (hosts built since September 2025 set it on a
// failed invocation), or a server error answered by an HTTP trigger.
func spanFailed(span *tracepb.Span, kind scope) bool {
	if span.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		return true
	}
	if kind != httpScope && span.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		return false
	}
	for _, key := range []string{"http.response.status_code", "http.status_code"} {
		if code := intAttr(span.GetAttributes(), key); code >= 500 && code <= 599 {
			return true
		}
	}
	return false
}

func intAttr(kvs []*commonpb.KeyValue, key string) int64 {
	for _, kv := range kvs {
		if kv.GetKey() != key {
			continue
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			return v.IntValue
		case *commonpb.AnyValue_StringValue:
			n, _ := strconv.ParseInt(v.StringValue, 10, 64)
			return n
		}
	}
	return 0
}
