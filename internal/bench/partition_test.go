package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/storage"
)

// Azure Table storage's documented scalability targets (Standard storage
// accounts, 1 KiB entities): about 2,000 entities a second per partition
// and 20,000 a second per account. Azurite has no such limits, so the
// ceilings below are arithmetic on the measured spread, not measurements of
// Azure.
const (
	azurePartitionRowsPerSecond = 2000
	azureAccountRowsPerSecond   = 20000
)

// BenchmarkPartitionSpread is P6: how many failure rows a second the
// layout sustains on Azure. A row is one (writer, function, second), so a
// fleet writes writers × failing functions rows a second. Fusebox spreads a
// minute over storage.FailureShards partitions by writer; the busiest
// partition decides the ceiling: 2,000 / its share of the rows, capped by
// the account's 20,000.
//
// Two fleets: HTTP ingest, where every request is a writer of its own
// (100,000 requests), and 50 instances writing to the table directly under
// their own ids (the documented layout for other languages). It also
// measures, on Azurite, Fusebox's Record against plain aztables batches of
// the same rows into one partition, with the same concurrency.
//
//	go test ./internal/bench -run '^$' -bench PartitionSpread -benchtime 3s
func BenchmarkPartitionSpread(b *testing.B) {
	minute := time.Now()
	for _, fleet := range []struct {
		name    string
		writers func(i int) string
		n       int
	}{
		{"http-requests", func(i int) string { return fmt.Sprintf("api.%012x.%d", 0xfeed, i) }, 100_000},
		{"50-instances", func(i int) string { return fmt.Sprintf("%016x-%d", rand.Uint64(), i) }, 50},
	} {
		b.Run("ceiling/"+fleet.name, func(b *testing.B) {
			// Each iteration is another fleet (new random instance ids);
			// report the average fleet's busiest partition and the worst.
			var sum, worst float64
			fleets := 0
			for b.Loop() {
				per := map[string]int{}
				for i := range fleet.n {
					per[storage.FailureShardPartition(minute, fleet.writers(i))]++
				}
				most := 0
				for _, n := range per {
					most = max(most, n)
				}
				share := float64(most) / float64(fleet.n)
				sum += share
				worst = max(worst, share)
				fleets++
			}
			mean := sum / float64(fleets)
			b.ReportMetric(mean*100, "busiest-partition-%")
			b.ReportMetric(worst*100, "busiest-partition-worst-%")
			b.ReportMetric(min(azurePartitionRowsPerSecond/mean, azureAccountRowsPerSecond), "azure-ceiling-rows/s")
			b.ReportMetric(min(azurePartitionRowsPerSecond/worst, azureAccountRowsPerSecond), "azure-ceiling-worst-rows/s")
			b.ReportMetric(azurePartitionRowsPerSecond, "one-partition-ceiling-rows/s")
			b.ReportMetric(0, "ns/op")
		})
	}

	const writers, functions = 16, 100
	b.Run("azurite/fusebox-record", func(b *testing.B) {
		w := newWorld(b, 0, 100)
		var rows atomic.Int64
		var seq atomic.Int64
		b.SetParallelism(writers / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			writer := fmt.Sprintf("writer-%d", seq.Add(1))
			for pb.Next() {
				now := time.Now()
				reports := make([]storage.Report, functions)
				for i := range reports {
					reports[i] = storage.Report{App: "bench", Function: fmt.Sprintf("F%04d", i), Second: now, Count: 1}
				}
				if err := w.store.Failures.Record(context.Background(), writer, reports); err != nil {
					b.Error(err)
					return
				}
				rows.Add(functions)
			}
		})
		b.ReportMetric(float64(rows.Load())/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("azurite/raw-one-partition", func(b *testing.B) {
		client := rawTable(b)
		var rows atomic.Int64
		var seq atomic.Int64
		var mu sync.Mutex
		b.SetParallelism(writers / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			writer := seq.Add(1)
			for pb.Next() {
				now := time.Now().UTC()
				actions := make([]aztables.TransactionAction, functions)
				for i := range actions {
					e := map[string]any{"PartitionKey": now.Format("200601021504"), "RowKey": fmt.Sprintf("bench|F%04d|%02d|raw.%d", i, now.Second(), writer),
						"App": "bench", "Function": fmt.Sprintf("F%04d", i), "Second": now.Truncate(time.Second).Format(time.RFC3339), "Second@odata.type": "Edm.DateTime", "Count": 1}
					data, _ := json.Marshal(e)
					actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: data}
				}
				if _, err := client.SubmitTransaction(context.Background(), actions, nil); err != nil {
					mu.Lock()
					b.Error(err)
					mu.Unlock()
					return
				}
				rows.Add(functions)
			}
		})
		b.ReportMetric(float64(rows.Load())/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	})
}
