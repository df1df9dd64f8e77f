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
		if tr, _, err := DecodeTraces(body); err == nil {
			for _, inv := range FromTraces(tr).Invocations {
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

// FuzzLeanReadsAsProtoDoes: whatever proto.Unmarshal reads, the lean
// decoder reads too, and FromTraces finds the same invocations in both:
// the same functions, ids, times, outcomes, instances, samples and reasons.
func FuzzLeanReadsAsProtoDoes(f *testing.F) {
	server := tracepb.Span_SPAN_KIND_SERVER
	for _, req := range []*coltracepb.ExportTraceServiceRequest{
		traces("Microsoft.Azure.WebJobs.Host", span("ProcessOrders", server, true, kv("faas.execution", "inv-1"), kv("other", "x"))),
		traces("Microsoft.AspNetCore", span("GET /orders", server, false, kv("faas.name", "Orders"), &commonpb.KeyValue{Key: "http.response.status_code", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 503}}})),
		traces("x", span("y", server, false, kv("faas.name", "A"), &commonpb.KeyValue{Key: "faas.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})),
		traces("Microsoft.Azure.Functions.Worker", span("function Sync", server, true, kv("faas.invocation_id", "0c6bd5d3-3f3a-4c1b-9a4e-7d0f6f9e2b11"), kv("faas.instance", "vm-2"))),
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
		lean, err := leanTraces(body)
		if err != nil {
			t.Fatalf("proto reads it, the lean decoder does not: %v", err)
		}
		if want, got := FromTraces(full), FromTraces(lean); !reflect.DeepEqual(want, got) {
			t.Fatalf("FromTraces differs:\nproto %+v\nlean  %+v", want, got)
		}
	})
}
