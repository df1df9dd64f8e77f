package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/jobs"
)

// BenchmarkPingIntake: 1,000 jobs that run every minute are pinged by 32
// clients at once, three pings each (as cron lines at the turn of a
// minute would), 3,000 pings in all; beside it, in the same run, the raw
// store takes 3,000 single-row inserts from 32 clients. It reports pings/s
// with the median, 99th percentile and worst answer, the raw inserts/s and
// the ratio, and fails when a ping answered 200 has no stored run or any
// ping answered 5xx. The per-address ping limit is lifted: 32 clients on
// one loopback address stand for many.
//
//	go test ./internal/bench -run '^$' -bench PingIntake -benchtime 1x
func BenchmarkPingIntake(b *testing.B) {
	const jobCount, perJob, clients = 1000, 3, 32
	for b.Loop() {
		srv := apptest.StartRealClock(b, map[string]string{"FUSEBOX_PING_RATE_LIMIT": "1000000"})
		ctx := context.Background()
		tokens := make([]string, jobCount)
		ids := make([]string, jobCount)
		for i := range jobCount {
			j := jobs.Fresh(time.Now())
			j.Name, j.Schedule, j.TimeZone, j.Grace = fmt.Sprintf("Job %04d", i), "0 * * * * *", "UTC", time.Minute
			if err := srv.App.Store.Jobs.Put(ctx, j); err != nil {
				b.Fatal(err)
			}
			tokens[i], ids[i] = j.PingToken, j.ID
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
		work := make(chan string, jobCount*perJob)
		for range perJob {
			for _, tok := range tokens {
				work <- srv.URL + "/ping/" + tok
			}
		}
		close(work)
		var mu sync.Mutex
		var times []time.Duration
		statuses := map[int]int{}
		var wg sync.WaitGroup
		before := storageCalls(b, srv.App.Metrics.Registry)
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for url := range work {
					t0 := time.Now()
					resp, err := client.Get(url)
					took := time.Since(t0)
					code := 0
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						code = resp.StatusCode
					}
					mu.Lock()
					times = append(times, took)
					statuses[code]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		calls := storageCalls(b, srv.App.Metrics.Registry) - before
		stored := 0
		for _, id := range ids {
			rs, _, err := srv.App.Store.Runs.Recent(ctx, id, 20, jobs.RunCursor{})
			if err != nil {
				b.Fatal(err)
			}
			stored += len(rs)
		}
		if stored != statuses[http.StatusOK] || statuses[http.StatusOK] != jobCount*perJob {
			b.Fatalf("answers %v, %d runs stored: every ping must be a stored run", statuses, stored)
		}
		pings := float64(len(times)) / elapsed.Seconds()
		raw := rawInserts(b, jobCount*perJob, clients)
		b.ReportMetric(pings, "pings/s")
		b.ReportMetric(ms(percentile(times, 0.5)), "p50-ms")
		b.ReportMetric(ms(percentile(times, 0.99)), "p99-ms")
		b.ReportMetric(ms(percentile(times, 1)), "worst-ms")
		b.ReportMetric(raw, "raw-inserts/s")
		b.ReportMetric(pings/raw, "ratio")
		b.ReportMetric(calls/float64(len(times)), "storage-calls/ping")
		b.ReportMetric(0, "ns/op")
	}
}

// rawInserts is what the store takes of n single-row inserts from clients
// at once.
func rawInserts(b *testing.B, n, clients int) float64 {
	table := rawTable(b)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				e, _ := json.Marshal(map[string]any{"PartitionKey": fmt.Sprintf("job-%04d", i%1000), "RowKey": fmt.Sprintf("%019d", i),
					"State": "ok", "Start": time.Now().UTC().Format(time.RFC3339Nano), "Start@odata.type": "Edm.DateTime"})
				if _, err := table.AddEntity(context.Background(), e, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}
