package bench_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"golang.org/x/sync/errgroup"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// fillQueue creates queue with n messages, 64 writers at a time, and
// deletes it when the benchmark ends.
func fillQueue(b *testing.B, conn, queue string, n int) *azqueue.QueueClient {
	b.Helper()
	qc, err := azqueue.NewQueueClientFromConnectionString(conn, queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := qc.Create(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = qc.Delete(context.Background(), nil) })
	var g errgroup.Group
	const writers = 64
	for w := range writers {
		g.Go(func() error {
			for i := w; i < n; i += writers {
				if _, err := qc.EnqueueMessage(context.Background(), fmt.Sprintf(`{"order": %d, "sku": "BROKEN"}`, i), nil); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return qc
}

func queueName(b *testing.B) string {
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	return "b" + hex.EncodeToString(buf)
}

// BenchmarkSetAsidePages measures the pages that show a poison queue of
// 10,000 messages (P4's conditions: real clock, every loop running, the
// watcher looking every second), against the raw calls a queue's page
// makes to the queue service (its properties and a peek of 32), measured
// in the same run.
//
//	go test ./internal/bench -run '^$' -bench SetAsidePages -benchtime 200x
func BenchmarkSetAsidePages(b *testing.B) {
	conn := testenv.ConnectionString(b)
	if !strings.Contains(conn, "QueueEndpoint=") {
		b.Fatal("the test storage has no QueueEndpoint: start Azurite with scripts/azurite.sh")
	}
	srv := apptest.StartWith(b, nil, apptest.Options{RealClock: true, SetAsideEvery: time.Second})
	ctx := context.Background()
	st := srv.App.Store
	source := queueName(b)
	if err := st.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null", HostStorage: conn}); err != nil {
		b.Fatal(err)
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: "TakeOrders", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Queue: source}}); err != nil {
		b.Fatal(err)
	}
	const total = 10_000
	start := time.Now()
	qc := fillQueue(b, conn, source+"-poison", total)
	b.Logf("10,000 messages put in %s", time.Since(start).Round(time.Millisecond))
	testenv.Eventually(b, 30*time.Second, func() (bool, string) { // the watcher announces nothing
		kept, err := st.SetAside.OfApp(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		seen := false
		for _, k := range kept.Queues {
			seen = seen || (k.Name == source+"-poison" && k.Count == total)
		}
		return seen, "the watcher did not see 10,000 messages"
	})
	c := signIn(b, srv)
	page := func(path, want string) func() error {
		return func() error {
			resp, err := c.Get(srv.URL + path)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				return fmt.Errorf("%s: status %d, or %q missing", path, resp.StatusCode, want)
			}
			return nil
		}
	}
	b.Run("raw-properties-and-peek", func(b *testing.B) {
		n := int32(queues.MaxPeek)
		measure(b, func() error {
			if _, err := qc.GetProperties(ctx, nil); err != nil {
				return err
			}
			_, err := qc.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: &n})
			return err
		})
	})
	count := `data-testid="setaside-count">10000<`
	b.Run("queue-page", func(b *testing.B) {
		measure(b, page("/apps/bench/queues/"+source+"-poison", `data-testid="queue-count">10000<`))
	})
	b.Run("app-queues-page", func(b *testing.B) { measure(b, page("/apps/bench/queues", count)) })
	b.Run("circuit-page", func(b *testing.B) { measure(b, page("/circuits/bench/TakeOrders", count)) })
	b.Run("overview", func(b *testing.B) { measure(b, page("/", `data-testid="apps-count"`)) })
}

// BenchmarkRequeueRate measures how fast a send-back moves messages (taken
// 32 at a time, put, deleted one by one), against the raw cost of the same
// three calls per message made straight to the queue service in the same
// run (take 32, then put and delete each).
//
//	go test ./internal/bench -run '^$' -bench RequeueRate -benchtime 1x
func BenchmarkRequeueRate(b *testing.B) {
	conn := testenv.ConnectionString(b)
	const n = 1000
	iteration := 0
	for b.Loop() {
		stem := queueName(b)
		// Azurite's queue service slows as it holds more messages: each
		// side's queues are emptied before the other is measured, and the
		// order alternates between iterations.
		measureMove := func() float64 {
			fillQueue(b, conn, stem+"-poison", n)
			fillQueue(b, conn, stem, 0)
			a, err := queues.Open(conn, nil, nil, egress.Endpoints{Development: true})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			moved, err := a.Move(context.Background(), queues.Move{From: stem + "-poison", To: stem, N: n, Hold: time.Minute}, nil)
			if err != nil || moved.Moved != n {
				b.Fatalf("moved %+v, %v; want %d", moved, err, n)
			}
			rate := n / time.Since(start).Seconds()
			clearQueue(b, conn, stem)
			return rate
		}
		measureRaw := func() float64 {
			raw := fillQueue(b, conn, stem+"-raw", n)
			rawTo := fillQueue(b, conn, stem+"-rawto", 0)
			start := time.Now()
			hold, batch := int32(60), int32(32)
			for moved := 0; moved < n; {
				got, err := raw.DequeueMessages(context.Background(), &azqueue.DequeueMessagesOptions{NumberOfMessages: &batch, VisibilityTimeout: &hold})
				if err != nil {
					b.Fatal(err)
				}
				if len(got.Messages) == 0 {
					break
				}
				for _, m := range got.Messages {
					if _, err := rawTo.EnqueueMessage(context.Background(), *m.MessageText, nil); err != nil {
						b.Fatal(err)
					}
					if _, err := raw.DeleteMessage(context.Background(), *m.MessageID, *m.PopReceipt, nil); err != nil {
						b.Fatal(err)
					}
					moved++
				}
			}
			rate := n / time.Since(start).Seconds()
			clearQueue(b, conn, stem+"-rawto")
			return rate
		}
		var rate, rawRate float64
		if iteration%2 == 0 {
			rate, rawRate = measureMove(), measureRaw()
		} else {
			rawRate, rate = measureRaw(), measureMove()
		}
		iteration++
		b.ReportMetric(rate, "msgs/s")
		b.ReportMetric(rawRate, "raw-msgs/s")
		b.ReportMetric(rate/rawRate, "ratio")
		b.ReportMetric(0, "ns/op")
	}
}

// clearQueue empties queue, so the messages it held stop slowing Azurite.
func clearQueue(b *testing.B, conn, queue string) {
	qc, err := azqueue.NewQueueClientFromConnectionString(conn, queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := qc.ClearMessages(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCircuitListPaged measures the circuit list with 10,000 circuits
// (P4's target at #26's scale): its first page of 100, a search by name, a
// page deep in the list and the overview, on the real clock with every loop
// running, against one raw read of a page's 100 rows. Whatever is measured
// first also pays for the seconds right after the instance settled.
//
//	BENCH_ONLY="circuit list" make bench
func BenchmarkCircuitListPaged(b *testing.B) {
	srv := apptest.StartRealClock(b, nil)
	ctx := context.Background()
	st := srv.App.Store
	settings := b.TempDir() + "/local.settings.json"
	if err := os.WriteFile(settings, []byte(`{"IsEncrypted": false, "Values": {}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := st.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: settings}); err != nil {
		b.Fatal(err)
	}
	var g errgroup.Group
	g.SetLimit(16)
	for i := range 10_000 {
		g.Go(func() error {
			return st.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%05d", i), Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	// Settled: the verifier notes once of each new circuit that its switch
	// cannot read the host (a write per circuit, a minute or more for
	// 10,000), and every list rereads the rows written in the last 10 s
	// (storage's circuitMargin). Measured once no row has changed for 12 s.
	versions := func() string {
		cs, err := st.Circuits.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var all strings.Builder
		for _, c := range cs {
			all.WriteString(c.Version)
		}
		return all.String()
	}
	began := time.Now()
	last, quietSince := versions(), time.Now()
	for time.Since(quietSince) < 12*time.Second {
		if time.Since(began) > 15*time.Minute {
			b.Fatal("circuits were still being written 15 minutes after they were created")
		}
		time.Sleep(2 * time.Second) // polling a background loop's progress, not synchronising a test
		if now := versions(); now != last {
			last, quietSince = now, time.Now()
		}
	}
	b.Logf("settled %.0f s after the circuits were written", time.Since(began).Seconds())
	c := signIn(b, srv)
	if f := os.Getenv("FUSEBOX_BENCH_CPUPROFILE"); f != "" {
		pf, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	for _, page := range []struct{ name, path, want string }{
		{"first-page", "/circuits", "10000 circuits · page 1 of 100"},
		{"search", "/circuits?q=F0999", "F09999"},
		{"page-70", "/circuits?page=70", "page 70 of 100"},
		{"overview", "/", "circuits closed"},
	} {
		b.Run(page.name, func(b *testing.B) {
			measure(b, func() error {
				resp, err := c.Get(srv.URL + page.path)
				if err != nil {
					return err
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), page.want) {
					return fmt.Errorf("%s: status %d, or %q missing", page.path, resp.StatusCode, page.want)
				}
				return nil
			})
		})
	}

	// The raw side: one plain aztables read of a page's 100 circuit rows,
	// the least a page that read its own rows from storage would pay.
	svc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(b), &aztables.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	raw := svc.NewClient(srv.Config.Storage.TablePrefix + storage.TableCircuits)
	b.Run("raw-100-rows", func(b *testing.B) {
		top := int32(100)
		filter := "PartitionKey eq 'bench' and RowKey ge 'c|' and RowKey lt 'c}'"
		measure(b, func() error {
			page, err := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter, Top: &top}).NextPage(ctx)
			if err == nil && len(page.Entities) != 100 {
				err = fmt.Errorf("raw read: %d rows", len(page.Entities))
			}
			return err
		})
	})
}
