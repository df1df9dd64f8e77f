package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
)

// BenchmarkIngestUnderForgedFlood measures what a real app's reports get
// while a stranger floods POST /api/v1/failures with keys that name the app
// but are not its key (#21): "quiet" with nobody else, "flood" with 4
// forging clients as fast as they go. It reports the real reports' latency
// (p50, p99, worst) and the share answered 202, and the forged requests'
// rate and how many of them cost a storage read (refused as unknown, not
// as limited). Every loop is bounded in time and sends only to loopback.
//
//	go test ./internal/bench -run '^$' -bench IngestUnderForgedFlood -benchtime 1x
func BenchmarkIngestUnderForgedFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		name := "quiet"
		if flood {
			name = "flood"
		}
		b.Run(name, func(b *testing.B) {
			srv := apptest.Start(b, nil)
			key, hash := auth.NewAppKey("bench")
			ctx := context.Background()
			if err := srv.App.Store.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null", APIKeyHash: hash}); err != nil {
				b.Fatal(err)
			}
			if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: "Process", Settings: circuit.Settings{Threshold: 1 << 30, Window: 30 * time.Second}}); err != nil {
				b.Fatal(err)
			}
			post := func(client *http.Client, key string) (int, error) {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures":[{"function":"Process","count":1}]}`))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			const run = 10 * time.Second
			stop := time.Now().Add(run)
			var forged atomic.Int64
			var wg sync.WaitGroup
			if flood {
				for w := range 4 {
					wg.Go(func() {
						client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
						for i := 0; time.Now().Before(stop); i++ {
							if _, err := post(client, fmt.Sprintf("fbx_bench_forged-%d-%d", w, i)); err != nil {
								return
							}
							forged.Add(1)
						}
					})
				}
			}
			// The real app: one report every 50 ms, as a busy function host.
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			var latencies []time.Duration
			accepted := 0
			tick := time.NewTicker(50 * time.Millisecond)
			for time.Now().Before(stop) {
				<-tick.C
				start := time.Now()
				status, err := post(client, key)
				if err != nil {
					b.Fatal(err)
				}
				latencies = append(latencies, time.Since(start))
				if status == http.StatusAccepted {
					accepted++
				}
			}
			tick.Stop()
			wg.Wait()
			metrics := scrape(b, srv.URL)
			b.ReportMetric(ms(percentile(latencies, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(latencies, 0.99)), "p99-ms")
			b.ReportMetric(ms(slices.Max(latencies)), "max-ms")
			b.ReportMetric(100*float64(accepted)/float64(len(latencies)), "real-202-%")
			b.ReportMetric(float64(forged.Load())/run.Seconds(), "forged-req/s")
			b.ReportMetric(metrics[`fusebox_ingest_unverified_total{reason="unknown"}`], "forged-read")
			b.ReportMetric(metrics[`fusebox_ingest_unverified_total{reason="limited"}`], "forged-limited")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// scrape reads /metrics' samples by name and labels.
func scrape(b *testing.B, base string) map[string]float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(value, &v); err == nil {
			out[name] = v
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
