package otlp

import (
	"bytes"
	"encoding/hex"
	"strings"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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

func scopeOf(name []byte) scope {
	switch s := view(name); {
	case strings.HasPrefix(s, "Microsoft.Azure.WebJobs"):
		return webJobsScope
	case s == "Azure.Messaging.EventHubs.EventProcessor", s == "Azure.Messaging.ServiceBus.ServiceBusProcessor":
		return processorScope
	case s == "Microsoft.AspNetCore":
		return httpScope
	case s == "Microsoft.Azure.Functions.Worker":
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

// FromTraces finds the invocations among an export's spans, as built by
// protojson or proto.Unmarshal. A span is an invocation when it carries
// faas.name or faas.invocation_id (out-of-process workers add them) or
// comes from a scope that traces invocations; other spans (dependencies,
// the function's own) are not invocations. DecodeTraces finds the same
// in an export's bytes without building the messages.
func FromTraces(req *coltracepb.ExportTraceServiceRequest) Mapped {
	m := Mapped{Source: Traces}
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	m.Invocations = make([]Invocation, 0, n)
	var f spanFields
	names := interned{}
	for _, rs := range req.GetResourceSpans() {
		var res resourceFields
		for _, kv := range rs.GetResource().GetAttributes() {
			res.slot(bytesOf(kv.GetKey())).add(anyValueOf(kv.GetValue()))
		}
		var nameDigits, instanceDigits [20]byte
		m.serviceName(view(res.serviceName.text(&nameDigits)))
		instance := names.keep(view(cut(res.instance.text(&instanceDigits), MaxInstance)))
		for _, ss := range rs.GetScopeSpans() {
			kind := scopeOf(bytesOf(ss.GetScope().GetName()))
			for _, span := range ss.GetSpans() {
				m.Records++
				f.fromProto(span)
				inv, why, ok := fromSpan(&f, kind, names)
				m.add(inv, why, ok, instance)
				if !ok {
					m.dependency(&f)
				}
			}
		}
	}
	return m
}

// spanFields is what is read of a span, by either decoder: DecodeTraces
// points into the export's bytes, FromTraces into its messages. Nothing
// is copied until an invocation keeps it.
type spanFields struct {
	spanCore
	// What a call span names it called (Dependency): kept apart and
	// cleared only when set, as few spans carry them.
	calls                  callFields
	callsSet, callsSkipped bool
}

// spanCore is what every span is read for.
type spanCore struct {
	name            []byte
	kind            tracepb.Span_SpanKind
	start, end      uint64
	traceID, spanID []byte
	code            tracepb.Status_StatusCode
	message         []byte

	faasName, invocationID, execution, instance attrValue
	httpStatus, httpStatusOld                   intAttr
	// The last "exception" event's type and message.
	exceptionType, exceptionMessage attrValue
}

type callFields struct {
	peerService, serverAddress, netPeerName, dbNamespace, dbName attrValue
}

// reset makes f ready for the next span.
func (f *spanFields) reset() {
	f.spanCore = spanCore{}
	if f.callsSet {
		f.calls, f.callsSet = callFields{}, false
	}
	f.callsSkipped = false
}

// slot is where the span's attribute key is read into: a text or an
// integer, or neither for a key Fusebox does not read.
func (f *spanFields) slot(key []byte) (*attrValue, *intAttr) {
	switch string(key) {
	case "faas.name":
		return &f.faasName, nil
	case "faas.invocation_id":
		return &f.invocationID, nil
	case "faas.execution":
		return &f.execution, nil
	case "faas.instance":
		return &f.instance, nil
	case "http.response.status_code":
		return nil, &f.httpStatus
	case "http.status_code":
		return nil, &f.httpStatusOld
	}
	return f.callSlot(key), nil
}

// callSlot is where a call span's key is read: nil for other keys, and
// for every key on a span whose kind, read already, is no call's (the
// host's own spans carry server.address too, and reading it for them cost
// the lean decoder some 15 %). Every SDK's encoder writes the kind before
// the attributes; a span whose kind comes after them, as a call's, has
// its call keys read again (callsSkipped).
func (f *spanFields) callSlot(key []byte) *attrValue {
	var a *attrValue
	switch string(key) {
	case "peer.service":
		a = &f.calls.peerService
	case "server.address":
		a = &f.calls.serverAddress
	case "net.peer.name":
		a = &f.calls.netPeerName
	case "db.namespace":
		a = &f.calls.dbNamespace
	case "db.name":
		a = &f.calls.dbName
	default:
		return nil
	}
	if !f.mayCall() {
		f.callsSkipped = true
		return nil
	}
	f.callsSet = true
	return a
}

// mayCall says whether the span's kind, as read so far, may be a call's.
func (f *spanFields) mayCall() bool {
	return f.kind == tracepb.Span_SPAN_KIND_UNSPECIFIED || f.kind == tracepb.Span_SPAN_KIND_CLIENT || f.kind == tracepb.Span_SPAN_KIND_PRODUCER
}

// exceptionSlot is where an "exception" event's attribute key is read.
func (f *spanFields) exceptionSlot(key []byte) *attrValue {
	switch string(key) {
	case "exception.type":
		return &f.exceptionType
	case "exception.message":
		return &f.exceptionMessage
	}
	return nil
}

func (f *spanFields) fromProto(span *tracepb.Span) {
	f.reset()
	f.spanCore = spanCore{name: bytesOf(span.GetName()), kind: span.GetKind(), start: span.GetStartTimeUnixNano(), end: span.GetEndTimeUnixNano(),
		traceID: span.GetTraceId(), spanID: span.GetSpanId(), code: span.GetStatus().GetCode(), message: bytesOf(span.GetStatus().GetMessage())}
	for _, kv := range span.GetAttributes() {
		text, number := f.slot(bytesOf(kv.GetKey()))
		v := anyValueOf(kv.GetValue())
		text.add(v)
		number.add(v)
	}
	events := span.GetEvents()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].GetName() == "exception" {
			for _, kv := range events[i].GetAttributes() {
				f.exceptionSlot(bytesOf(kv.GetKey())).add(anyValueOf(kv.GetValue()))
			}
			break
		}
	}
}

// resourceFields is what is read of a resource.
type resourceFields struct{ serviceName, instance attrValue }

func (r *resourceFields) slot(key []byte) *attrValue {
	switch string(key) {
	case "service.name":
		return &r.serviceName
	case "service.instance.id":
		return &r.instance
	}
	return nil
}

// fromSpan reads one span: ok is false for a span that is no invocation;
// why says why an invocation names no function.
func fromSpan(f *spanFields, kind scope, names interned) (inv Invocation, why string, ok bool) {
	var nameDigits, idDigits [20]byte
	faasName, dupName := f.faasName.text(&nameDigits), f.faasName.conflicting
	id, dupID := f.invocationID.text(&idDigits), f.invocationID.conflicting
	if len(id) > 0 && !validID(view(id)) {
		return Invocation{}, WhyLongID, true
	}
	if len(id) == 0 {
		// The older convention's name; an older WebJobs SDK put the
		// trigger's reason there, which is no id.
		if id, dupID = f.execution.text(&idDigits), f.execution.conflicting; !validID(view(id)) {
			id = nil
		}
	}
	switch {
	case len(faasName) == 0 && len(id) == 0 && (kind == otherScope || kind == workerScope):
		return Invocation{}, "", false
	case kind == httpScope && f.kind != tracepb.Span_SPAN_KIND_SERVER:
		return Invocation{}, "", false
	case dupName || dupID:
		return Invocation{}, WhyConflicting, true
	}
	name, named := functionName(view(faasName))
	if !named && kind == webJobsScope {
		// The host names its span after the function; its faas.name may
		// be the method's full name.
		name, named = functionName(view(f.name))
	}
	if !named && kind == workerScope && len(faasName) == 0 {
		// Schema 1.37 names the span "function <Name>"; 1.17's "Invoke"
		// says only the invocation id.
		if n, ok := bytes.CutPrefix(f.name, []byte("function ")); ok {
			name, named = functionName(view(n))
		} else {
			return Invocation{}, WhyWorker, true
		}
	}
	if !named {
		switch {
		case len(faasName) > 0:
			return Invocation{}, WhyName, true
		case kind == httpScope:
			return Invocation{}, WhyHTTP, true
		case kind == processorScope:
			return Invocation{}, WhyProcessor, true
		}
		return Invocation{}, WhyName, true
	}
	at := unixNano(f.end)
	if at.IsZero() {
		at = unixNano(f.start)
	}
	if at.IsZero() {
		return Invocation{}, WhyNoTime, true
	}
	inv = Invocation{Function: names.keep(name), ID: string(id), At: at, Start: unixNano(f.start), Failed: f.failed(kind), Signal: HostSpan}
	if len(id) == 0 && len(f.spanID) > 0 {
		inv.ID = "span:" + hex.EncodeToString(f.spanID)
	}
	if kind == workerScope || kind == otherScope {
		inv.Signal = WorkerSpan
	}
	var instanceDigits [20]byte
	inv.Instance = names.keep(view(cut(f.instance.text(&instanceDigits), MaxInstance)))
	if inv.Failed {
		inv.Sample = names.keep(f.errorText())
		inv.Trace = traceParent(f.traceID, f.spanID)
	}
	return inv, "", true
}

// errorText is a failed span's error, cut, read but not copied: its
// exception event's type and message (OpenTelemetry's RecordException,
// which workers' SDKs call), else its status message.
func (f *spanFields) errorText() string {
	var typeDigits, msgDigits [20]byte
	typ, msg := f.exceptionType.text(&typeDigits), f.exceptionMessage.text(&msgDigits)
	switch {
	case len(typ) > 0 && len(msg) > 0:
		return cut(string(cut(typ, MaxSample))+": "+view(cut(msg, MaxSample)), MaxSample)
	case len(msg) > 0:
		return view(cut(msg, MaxSample))
	case len(typ) > 0:
		return view(cut(typ, MaxSample))
	}
	return view(cut(f.message, MaxSample))
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

// failed: status ERROR (hosts built since September 2025 set it on a
// failed invocation), or a server error answered by an HTTP trigger.
func (f *spanFields) failed(kind scope) bool {
	if f.code == tracepb.Status_STATUS_CODE_ERROR {
		return true
	}
	if kind != httpScope && f.kind != tracepb.Span_SPAN_KIND_SERVER {
		return false
	}
	for _, code := range []intAttr{f.httpStatus, f.httpStatusOld} {
		if code.n >= 500 && code.n <= 599 {
			return true
		}
	}
	return false
}
