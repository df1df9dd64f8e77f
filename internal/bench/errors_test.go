package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// BenchmarkCircuitPageErrors is #36's P4 case: the page of a circuit whose
// window holds 10,000 failures with 10,000 distinct error texts (100
// instances × 100 seconds, each text differing in words, so no two fold
// into one group), fetched by a signed-in client while Fusebox runs as in
// production. The page groups them (errortexts) and shows the top ten: it
// reads at most errortexts.MaxRows of them, and keeps the grouping for a
// while (errortexts.Cache): 5 s for a closed circuit, whose window moves,
// 30 s for an open one, whose window before the trip stands still, and
// past that while the circuit's rows have not changed. The first view
// after the rows arrive (or after the trip) is reported apart (first-ms):
// it groups the texts while it waits. The 300 measured views begin once
// the evaluator's reads have passed the burst of rows.
//
//	go test ./internal/bench -run '^$' -bench CircuitPageErrors -benchtime 300x
func BenchmarkCircuitPageErrors(b *testing.B) {
	srv := apptest.StartRealClock(b, nil)
	ctx := context.Background()
	st := srv.App.Store
	if err := st.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: "Noisy", Settings: circuit.Settings{Threshold: 1 << 20, Window: 30 * time.Minute}}); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for w := range 100 {
		reports := make([]storage.Report, 0, 100)
		for s := range 100 {
			reports = append(reports, storage.Report{App: "bench", Function: "Noisy", Second: now.Add(-time.Duration(s+1) * time.Second), Count: 1,
				Sample: fmt.Sprintf("Store %s refused the write of %s", words(w), words(100+s))})
		}
		if err := st.Failures.Record(ctx, fmt.Sprintf("instance-%03d", w), reports); err != nil {
			b.Fatal(err)
		}
	}
	written := time.Now()
	b.Logf("10,000 rows written in %s", written.Sub(now).Round(time.Millisecond))
	c := signIn(b, srv)
	for _, state := range []circuit.State{circuit.Closed, circuit.Open} {
		b.Run(state.String(), func(b *testing.B) {
			ci, err := st.Circuits.Get(ctx, "bench", "Noisy")
			if err != nil {
				b.Fatal(err)
			}
			if state == circuit.Open {
				ci.State, ci.Episode, ci.ChangedAt, ci.Reason = circuit.Open, ci.Episode+1, time.Now(), "10000 failures in 30m (threshold 9999)"
				if err := st.Circuits.Put(ctx, ci); err != nil {
					b.Fatal(err)
				}
			}
			view := func() time.Duration {
				start := time.Now()
				resp, err := c.Get(srv.URL + "/circuits/bench/Noisy")
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if resp.StatusCode != http.StatusOK || strings.Count(string(body), `data-testid="error-group"`) != 10 || !strings.Contains(string(body), "the rest were not read") {
					i := strings.Index(string(body), "What failed")
					b.Fatalf("status %d; want the ten largest groups of the rows read, and that the rest were not:\n%.3000s", resp.StatusCode, string(body)[max(i, 0):])
				}
				return took
			}
			// The first view after the burst (10,000 rows written in a
			// second or two, or the trip) groups the texts while it
			// waits, and the evaluator is reading the same rows: it is
			// reported apart, and the views are measured once the
			// evaluator has finished a tick begun after it, and after
			// its reads have passed the burst: an incremental read asks
			// again for what changed in its margin (2 s, docs/storage.md)
			// and the second the service's Date truncates, so the ticks
			// of the 3 s after the burst read its 10,000 rows again, and
			// the one before a tick begun 4 s after may read some.
			first, settled := view(), time.Now()
			srv.TickAfter(b, later(settled, written.Add(4*time.Second)))
			var times []time.Duration
			for b.Loop() {
				times = append(times, view())
			}
			b.ReportMetric(ms(first), "first-ms")
			b.ReportMetric(ms(percentile(times, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(times, 0.99)), "p99-ms")
			b.ReportMetric(ms(slices.Max(times)), "max-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// words spells n in letters only, so error texts differ in what
// fingerprinting keeps (it folds digits).
func words(n int) string {
	var b []byte
	for {
		b = append(b, byte('a'+n%26))
		n /= 26
		if n == 0 {
			return "x" + string(b)
		}
	}
}

// BenchmarkWindowFullRead is what the evaluator's full reread of a window
// costs (once a minute, and at every start): 10,000 failure rows whose
// error samples are 1 kB, as a host's exception messages can be, read
// whole by a fresh reader each time. The window's rows are read without
// their samples (storage.windowColumns); the raw side reads every column
// of the same rows through plain aztables, as the reader did before.
//
//	go test ./internal/bench -run '^$' -bench WindowFullRead -benchtime 10x
func BenchmarkWindowFullRead(b *testing.B) {
	svc, _ := testenv.Storage(b)
	if err := svc.CreateTable(context.Background(), storage.TableFailures); err != nil {
		b.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	sample := strings.Repeat("The store did not answer within the time allowed. ", 20)[:1000]
	for w := range 100 {
		reports := make([]storage.Report, 0, 100)
		for s := range 100 {
			reports = append(reports, storage.Report{App: "bench", Function: "Noisy", Second: now.Add(-time.Duration(s+1) * time.Second), Count: 1, Sample: sample})
		}
		if err := st.Failures.Record(context.Background(), fmt.Sprintf("instance-%03d", w), reports); err != nil {
			b.Fatal(err)
		}
	}
	raw, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(b), &aztables.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	table := raw.NewClient(svc.TableName(storage.TableFailures))
	var window, whole []time.Duration
	for b.Loop() {
		t0 := time.Now()
		rows, _, err := st.Failures.Reader().Window(context.Background(), now.Add(-2*time.Minute), now)
		if err != nil || len(rows) != 10_000 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
		window = append(window, time.Since(t0))
		t0 = time.Now()
		n := 0
		for pager := table.NewListEntitiesPager(nil); pager.More(); {
			page, err := pager.NextPage(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Entities)
		}
		if n != 10_000 {
			b.Fatalf("raw: %d rows", n)
		}
		whole = append(whole, time.Since(t0))
	}
	b.ReportMetric(ms(percentile(window, 0.5)), "window-p50-ms")
	b.ReportMetric(ms(slices.Max(window)), "window-max-ms")
	b.ReportMetric(ms(percentile(whole, 0.5)), "every-column-p50-ms")
	b.ReportMetric(ms(slices.Max(whole)), "every-column-max-ms")
	b.ReportMetric(0, "ns/op")
}
