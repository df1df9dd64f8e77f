package otlp

import (
	"reflect"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// FuzzDecodeAndMap: whatever arrives, decoding and mapping never panic,
// and every invocation counted names a valid function.
func FuzzDecodeAndMap(f *testing.F) {
	b, _ := proto.Marshal(traces("Microsoft.Azure.WebJobs", span("A", 2, true)))
	f.Add(b)
	b, _ = proto.Marshal(logs(record("Executed 'Functions.A' (Failed, Id=1, Duration=1ms)")))
	f.Add(b)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"A","attributes":[{"key":"faas.name","value":{"stringValue":"A"}}]}]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if m, _, err := DecodeTraces(body); err == nil {
			for _, inv := range m.Invocations {
				if _, ok := functionName(inv.Function); !ok {
					t.Fatalf("counted %q", inv.Function)
				}
			}
		}
		if lr, _, err := DecodeLogs(body); err == nil {
			for _, inv := range FromLogs(lr).Invocations {
				if _, ok := functionName(inv.Function); !ok {
					t.Fatalf("counted %q", inv.Function)
				}
			}
		}
		tr := &coltracepb.ExportTraceServiceRequest{}
		if WeighJSON(body) == nil && protojson.Unmarshal(body, tr) == nil {
			LimitTraces(tr, 3)
			for _, inv := range FromTraces(tr).Invocations {
				if _, ok := functionName(inv.Function); !ok {
					t.Fatalf("counted %q", inv.Function)
				}
			}
		}
		lr := &collogspb.ExportLogsServiceRequest{}
		if WeighJSON(body) == nil && protojson.Unmarshal(body, lr) == nil {
			LimitLogs(lr, 3)
			for _, inv := range FromLogs(lr).Invocations {
				if _, ok := functionName(inv.Function); !ok {
					t.Fatalf("counted %q", inv.Function)
				}
			}
		}
	})
}

func withEvents(req *coltracepb.ExportTraceServiceRequest, events ...*tracepb.Span_Event) *coltracepb.ExportTraceServiceRequest {
	req.ResourceSpans[0].ScopeSpans[0].Spans[0].Events = events
	return req
}

// FuzzLeanReadsAsProtoDoes: whatever proto.Unmarshal reads, DecodeTraces
// reads too, and finds in it what FromTraces finds in proto.Unmarshal's
// messages: the same functions, ids, times, outcomes, instances, samples,
// traces, reasons, service names and counts.
func FuzzLeanReadsAsProtoDoes(f *testing.F) {
	server := tracepb.Span_SPAN_KIND_SERVER
	for _, req := range []*coltracepb.ExportTraceServiceRequest{
		traces("Microsoft.Azure.WebJobs.Host", span("ProcessOrders", server, true, kv("faas.execution", "inv-1"), kv("other", "x"))),
		traces("Microsoft.AspNetCore", span("GET /orders", server, false, kv("faas.name", "Orders"), &commonpb.KeyValue{Key: "http.response.status_code", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 503}}})),
		traces("x", span("y", server, false, kv("faas.name", "A"), &commonpb.KeyValue{Key: "faas.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})),
		traces("Microsoft.Azure.Functions.Worker", span("function Sync", server, true, kv("faas.invocation_id", "0c6bd5d3-3f3a-4c1b-9a4e-7d0f6f9e2b11"), kv("faas.instance", "vm-2"))),
		withEvents(traces("x", span("y", server, true, kv("faas.name", "A"), kvInt("faas.instance", 7))),
			&tracepb.Span_Event{Name: "exception", Attributes: []*commonpb.KeyValue{kv("exception.type", "E"), kv("exception.message", "m")}}),
	} {
		b, _ := proto.Marshal(req)
		f.Add(b)
		f.Add(append(b, b...)) // every message field given twice is merged
	}
	// One attribute whose value is given twice, a string then a bool: the
	// merged value is the bool, which names no function.
	kvb, _ := proto.Marshal(kv("faas.name", "A"))
	boolean, _ := proto.Marshal(&commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}})
	kvb = protowire.AppendBytes(protowire.AppendTag(kvb, 2, protowire.BytesType), boolean)
	sb, _ := proto.Marshal(span("A", server, true))
	sb = protowire.AppendBytes(protowire.AppendTag(sb, 9, protowire.BytesType), kvb)
	wrap := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	f.Add(wrap(1, wrap(2, wrap(2, sb))))
	f.Fuzz(func(t *testing.T, body []byte) {
		full := &coltracepb.ExportTraceServiceRequest{}
		if proto.Unmarshal(body, full) != nil {
			return
		}
		got, cut, err := DecodeTraces(body)
		if err != nil {
			t.Fatalf("proto reads it, DecodeTraces does not: %v", err)
		}
		if want := LimitTraces(full, MaxRecords); cut != want {
			t.Fatalf("cut %d spans, LimitTraces cuts %d", cut, want)
		}
		if want := FromTraces(full); !reflect.DeepEqual(want, got) {
			t.Fatalf("FromTraces differs:\nproto %+v\nlean  %+v", want, got)
		}
	})
}
