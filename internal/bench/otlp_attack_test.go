package bench_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
)

// BenchmarkOTLPUnderAttack is "OTLP under attack" (docs/benchmarks.md):
// one app's key holder sends, from 8 connections for 5 s each,
//
//   - exports of 2,000,000 empty spans (4 MB, 4 kB gzipped), which decoded
//     whole would cost ~600 MB each;
//   - exports of 2,000,000 empty resources, which no record cap stops;
//   - exports of 1,000 spans with 4 kB invocation ids, timestamped an hour
//     ago (ingest refuses them, which once cost no storage but kept ids);
//
// and reports the instance's peak resident memory over its idle memory
// (the process holds the load generator too, whose gzipped bodies are a
// few kB) and the slowest answer. Targets: ≤ +256 MB, every answer
// within 10 s.
//
//	go test ./internal/bench -run '^$' -bench OTLPUnderAttack -benchtime 1x
func BenchmarkOTLPUnderAttack(b *testing.B) {
	srv := apptest.Start(b, nil)
	ctx := context.Background()
	key, hash := auth.NewAppKey("bench")
	if err := srv.App.Store.Apps.Put(ctx, circuit.App{ID: "bench", Site: "func-bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null", APIKeyHash: hash}); err != nil {
		b.Fatal(err)
	}
	if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: "F", Settings: circuit.Settings{Threshold: 1 << 30, Window: 30 * time.Second}}); err != nil {
		b.Fatal(err)
	}
	longIDs := func() []byte {
		at := srv.Clock.Now().Add(-time.Hour)
		spans := make([]*tracepb.Span, 1000)
		for i := range spans {
			spans[i] = &tracepb.Span{Name: "F", Kind: tracepb.Span_SPAN_KIND_SERVER, EndTimeUnixNano: uint64(at.UnixNano()),
				Attributes: []*commonpb.KeyValue{{Key: "faas.invocation_id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprintf("%04d%s", i, strings.Repeat("x", 4096))}}}}}
		}
		body, _ := proto.Marshal(otlpWith(spans))
		return body
	}
	attacks := []struct {
		name string
		body []byte
	}{
		{"2,000,000 empty spans", emptyOf(2_000_000, true)},
		{"2,000,000 empty resources", emptyOf(2_000_000, false)},
		{"1,000 spans with 4 kB ids", longIDs()},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	// Warm up with one ordinary export, then read the idle memory.
	if status, err := postGzip(client, srv.URL, key, mustMarshal(otlpExport("warm", srv.Clock.Now(), 10, 1, 1))); err != nil || status != http.StatusOK {
		b.Fatalf("warm-up export: %d %v", status, err)
	}
	clearPeak()
	idle := procStatus("VmRSS")
	statuses := map[string]map[int]int{}
	var slowest time.Duration
	var mu sync.Mutex
	for _, a := range attacks {
		gz := gzipped(a.body)
		statuses[a.name] = map[int]int{}
		var wg sync.WaitGroup
		start := time.Now()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Since(start) < 5*time.Second {
					t0 := time.Now()
					status, err := postExportEncoded(client, srv.URL, key, gz, "gzip")
					took := time.Since(t0)
					mu.Lock()
					if err != nil {
						status = -1
					}
					statuses[a.name][status]++
					slowest = max(slowest, took)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		b.Logf("%s (%d bytes, %d gzipped): answers %v", a.name, len(a.body), len(gz), statuses[a.name])
	}
	peak := procStatus("VmHWM")
	b.ReportMetric(float64(peak-idle)/1024, "peak-over-idle-MB")
	b.ReportMetric(float64(idle)/1024, "idle-rss-MB")
	b.ReportMetric(slowest.Seconds(), "slowest-answer-s")
	b.ReportMetric(0, "ns/op")
}

func otlpWith(spans []*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	req := otlpExport("x", time.Now(), 1, 1, 1)
	req.ResourceSpans[0].ScopeSpans[0].Spans = spans
	return req
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// emptyOf is n empty spans in one scope (spans) or n empty resources.
func emptyOf(n int, spans bool) []byte {
	var inner []byte
	for range n {
		inner = protowire.AppendTag(inner, 2, protowire.BytesType)
		inner = protowire.AppendBytes(inner, nil)
	}
	if !spans {
		out := make([]byte, 0, 2*n)
		for range n {
			out = protowire.AppendTag(out, 1, protowire.BytesType)
			out = protowire.AppendBytes(out, nil)
		}
		return out
	}
	rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), inner)
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func postGzip(client *http.Client, url, key string, body []byte) (int, error) {
	return postExportEncoded(client, url, key, gzipped(body), "gzip")
}

// clearPeak resets VmHWM to the current resident memory (Linux).
func clearPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// procStatus is a /proc/self/status field in kB, 0 where there is none.
func procStatus(field string) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	return 0
}
