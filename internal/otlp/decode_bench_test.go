package otlp

import (
	"fmt"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// hostLikeExport is a batch of 512 spans shaped like a host's: trace and
// parent ids, ten attributes of which FromTraces reads three, and an
// exception event on the failed ones.
func hostLikeExport() []byte {
	spans := make([]*tracepb.Span, 512)
	for i := range spans {
		s := span(fmt.Sprintf("F%d", i%4), tracepb.Span_SPAN_KIND_SERVER, i%10 == 0,
			kv("faas.name", fmt.Sprintf("F%d", i%4)), kv("faas.invocation_id", fmt.Sprintf("0c6bd5d3-3f3a-4c1b-9a4e-%012d", i)),
			kv("faas.trigger", "pubsub"), kv("faas.instance", "vm-1"), kv("az.schema_url", "https://opentelemetry.io/schemas/1.17.0"),
			kv("messaging.system", "eventhubs"), kv("messaging.destination.name", "orders"), kv("server.address", "ns.servicebus.windows.net"),
			kv("code.function", "Contoso.Orders.Run"), kv("process.pid", "4242"))
		s.TraceId, s.ParentSpanId = []byte("0123456789abcdef"), []byte("01234567")
		if i%10 == 0 {
			s.Events = []*tracepb.Span_Event{{Name: "exception", Attributes: []*commonpb.KeyValue{kv("exception.type", "System.TimeoutException"), kv("exception.message", "The store did not answer in 30 s.")}}}
		}
		spans[i] = s
	}
	b, _ := proto.Marshal(traces("Microsoft.Azure.WebJobs.Host", spans...))
	return b
}

// BenchmarkDecodeTraces: DecodeTraces, reading the bytes straight into
// invocations, against weighing by the descriptors then proto.Unmarshal
// and FromTraces, which it replaced.
func BenchmarkDecodeTraces(b *testing.B) {
	body := hostLikeExport()
	b.Run("lean", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			m, _, err := DecodeTraces(body)
			if err != nil || len(m.Invocations) != 512 {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			req := &coltracepb.ExportTraceServiceRequest{}
			cost := 0
			if err := weigh(body, req.ProtoReflect().Descriptor(), 0, &cost); err != nil {
				b.Fatal(err)
			}
			if err := proto.Unmarshal(body, req); err != nil || len(FromTraces(req).Invocations) != 512 {
				b.Fatal(err)
			}
		}
	})
}
