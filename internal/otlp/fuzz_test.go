package otlp

import (
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
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
