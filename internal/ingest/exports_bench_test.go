package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/storage"
)

// nopRecorder keeps nothing: the store is not what this measures.
type nopRecorder struct{}

func (nopRecorder) Record(context.Context, string, []storage.Report) error { return nil }

// BenchmarkExportsTake is what counting costs an export of P7's shape
// (BenchmarkOTLPIngest), without the store or HTTP: 64 exports of 512
// failed host spans over 4 functions and 5 seconds, sent in turn, so
// Azurite's noise does not hide what intake itself spends.
//
//	go test ./internal/ingest -run '^$' -bench ExportsTake -benchtime 2000x
func BenchmarkExportsTake(b *testing.B) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var cs circuits
	for f := range 4 {
		cs = append(cs, circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%d", f), Settings: circuit.Settings{Window: 30 * time.Second}})
	}
	svc := &ingest.Service{Router: ingest.NewRouter(cs, nil, ingest.Settings{}), Failures: nopRecorder{}, Now: func() time.Time { return now }, Writer: func() string { return "api" }}
	x := &ingest.Exports{Reports: svc, Seen: &otlp.Seen{}, Arrivals: &ingest.Arrivals{}, Now: func() time.Time { return now }}
	exports := make([]otlp.Mapped, 64)
	for e := range exports {
		invs := make([]otlp.Invocation, 512)
		for i := range invs {
			invs[i] = otlp.Invocation{Function: fmt.Sprintf("F%d", i%4), ID: fmt.Sprintf("%d-%d", e, i), At: now.Add(-time.Duration(i%5) * time.Second),
				Failed: true, Instance: "i0", Sample: "System.TimeoutException: The store did not answer within 30 s.", Trace: "00-30313233343536373839616263646566-01f4000000000001-01"}
		}
		exports[e] = otlp.Mapped{Source: otlp.Traces, Records: 512, Invocations: invs}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := x.Take(b.Context(), ingest.Export{AppID: "bench", Protocol: "http/protobuf", Mapped: exports[i%64]}); err != nil {
			b.Fatal(err)
		}
	}
}
