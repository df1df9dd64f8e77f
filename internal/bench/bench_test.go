package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/loop"
	"github.com/fusebox/fusebox/internal/mailer"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/migrations"
)

// world is a migrated storage account with nCircuits circuits on one app
// whose switch records when it is called.
type world struct {
	store   *storage.Store
	svc     *tablestore.Service
	calls   *callCounter
	switchd *recordingSwitch
}

type callCounter struct {
	mu    sync.Mutex
	byOp  map[string]int
	table map[string]int
}

func (c *callCounter) observe(op, table string, _ time.Duration, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byOp[op]++
	c.table[op+" "+table]++
}

func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.table {
		out[k] = v
	}
	return out
}

// recordingSwitch notes when each function's trigger was switched off.
type recordingSwitch struct {
	mu  sync.Mutex
	off map[string]time.Time
}

func (s *recordingSwitch) Disabled(context.Context, circuit.App) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for f := range s.off {
		out[f] = true
	}
	return out, nil
}

func (s *recordingSwitch) Apply(ctx context.Context, app circuit.App, off map[string]bool) error {
	if app.ID == hangingApp {
		<-ctx.Done() // an ARM endpoint that never answers
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for function, disabled := range off {
		if _, ok := s.off[function]; disabled && !ok {
			s.off[function] = time.Now()
		}
	}
	return nil
}

// hangingApp's switch never answers: P1 measures the other app's trips
// while one of its circuits waits on it.
const hangingApp = "hanging"

func (s *recordingSwitch) at(function string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.off[function]
	return t, ok
}

func newWorld(b *testing.B, nCircuits, threshold int) *world {
	return newWorldWith(b, nCircuits, threshold, circuit.Rule{})
}

func newWorldWith(b *testing.B, nCircuits, threshold int, rule circuit.Rule) *world {
	b.Helper()
	calls := &callCounter{byOp: map[string]int{}, table: map[string]int{}}
	svc, err := tablestore.NewFromConnectionString(testenv.ConnectionString(b), tablestore.Options{Prefix: testenv.Prefix(b), Observe: calls.observe})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := svc.CreateTable(ctx, storage.TableLeases); err != nil {
		b.Fatal(err)
	}
	l, _ := lease.New(storage.New(svc).Leases, lease.Settings{})
	r, err := migrate.New(svc, migrations.Steps(), migrate.Settings{Locker: l})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Apply(ctx); err != nil {
		b.Fatal(err)
	}
	st := storage.New(svc)
	if err := st.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Apps.Put(ctx, circuit.App{ID: hangingApp, Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: hangingApp, Function: "Stuck", Threshold: 1, Window: 30 * time.Second}); err != nil {
		b.Fatal(err)
	}
	for i := range nCircuits {
		if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%04d", i), Threshold: threshold, Window: 30 * time.Second, Rule: rule}); err != nil {
			b.Fatal(err)
		}
	}
	// Circuits are long-lived: let their rows age past the margin of the
	// incremental reads, as they would have in a running installation.
	time.Sleep(11 * time.Second)
	return &world{store: st, svc: svc, calls: calls, switchd: &recordingSwitch{off: map[string]time.Time{}}}
}

// percentile is the nearest-rank percentile: the smallest sample with at
// least p of the samples at or below it, so p = 1 is the maximum.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*p)) - 1
	return s[max(i, 0)]
}

// BenchmarkTripLatency is P1: with 1,000 circuits and a background load of
// 2,000 failures/s spread over them (never enough to trip one), probe
// circuits are pushed past their threshold one at a time; the latency is
// from the moment the crossing failure's write returned to the moment the
// evaluator called the switch. It also reports P3, the storage queries per
// evaluator tick.
//
//	go test ./internal/bench -run '^$' -bench TripLatency -benchtime 1x
func BenchmarkTripLatency(b *testing.B) { tripLatency(b, false) }

// BenchmarkTripLatencyRatio is P1 with failure-ratio circuits (trip at 60 %
// of calls once 100 calls): the background is 2,000 calls/s, half of them
// failures, and each probe adds 200 failures.
//
//	go test ./internal/bench -run '^$' -bench TripLatencyRatio -benchtime 1x
func BenchmarkTripLatencyRatio(b *testing.B) { tripLatency(b, true) }

func tripLatency(b *testing.B, ratio bool) {
	const nCircuits, probes = 1000, 40
	var w *world
	background, probe := storage.Report{Count: 2}, storage.Report{Count: 101}
	if ratio {
		w = newWorldWith(b, nCircuits, 100, circuit.Rule{Ratio: 0.6, MinCalls: 100})
		background, probe = storage.Report{Count: 1, Successes: 1}, storage.Report{Count: 200}
	} else {
		w = newWorld(b, nCircuits, 100)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eval := circuit.NewEvaluator(storage.EvaluatorStore{Store: w.store}, w.switchd, circuit.EvaluatorSettings{ApplyTimeout: time.Hour})
	run := (&loop.Runner{}).Work(loop.Loop{Name: "evaluator", Every: time.Second, Begin: eval.Begin, End: eval.Wait, Pass: eval.Tick})
	done := make(chan error, 1)
	go func() { done <- run(ctx, lease.Fence{Lease: "evaluator", Generation: 1}) }()
	// One app's ARM never answers: its circuit trips and its switch call
	// hangs for the whole run.
	if err := w.store.Failures.Record(ctx, "stuck", []storage.Report{{App: hangingApp, Function: "Stuck", Second: time.Now(), Count: 2}}); err != nil {
		b.Fatal(err)
	}

	// Background: 2,000 failures/s, 2 per circuit per second (60 in a
	// window, under the threshold of 100), as 4 instances each flushing
	// once a second.
	var loadErr atomic.Value
	var wg sync.WaitGroup
	for inst := range 4 {
		wg.Go(func() {
			writer := fmt.Sprintf("load-%d", inst)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					var reports []storage.Report
					for i := inst; i < nCircuits; i += 4 {
						reports = append(reports, storage.Report{App: "bench", Function: fmt.Sprintf("F%04d", i), Second: now, Count: background.Count, Successes: background.Successes})
					}
					if err := w.store.Failures.Record(ctx, writer, reports); err != nil && ctx.Err() == nil {
						loadErr.Store(err)
					}
				}
			}
		})
	}
	time.Sleep(3 * time.Second) // let the load and the evaluator reach a steady state

	before := w.calls.snapshot()
	tickStart := time.Now()
	var latencies []time.Duration
	for b.Loop() {
		latencies = latencies[:0]
		for p := range probes {
			fn := fmt.Sprintf("F%04d", p)
			// Land at a random point of the evaluator's second.
			time.Sleep(time.Duration(p*37%1000) * time.Millisecond)
			if err := w.store.Failures.Record(ctx, "probe", []storage.Report{{App: "bench", Function: fn, Second: time.Now(), Count: probe.Count}}); err != nil {
				b.Fatal(err)
			}
			written := time.Now()
			for {
				if at, ok := w.switchd.at(fn); ok {
					latencies = append(latencies, at.Sub(written))
					break
				}
				if time.Since(written) > 30*time.Second {
					b.Fatalf("%s not tripped 30 s after its crossing failure", fn)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	elapsed := time.Since(tickStart)
	after := w.calls.snapshot()
	cancel()
	wg.Wait()
	<-done
	if err, _ := loadErr.Load().(error); err != nil {
		b.Fatalf("background load: %v", err)
	}
	ticks := float64(after["query "+w.svc.TableName(storage.TableCircuits)] - before["query "+w.svc.TableName(storage.TableCircuits)])
	perTick := func(op string) float64 {
		n := 0
		for k, v := range after {
			if strings.HasPrefix(k, op) {
				n += v - before[k]
			}
		}
		return float64(n) / ticks
	}
	b.ReportMetric(percentile(latencies, 0.5).Seconds(), "p50-s")
	b.ReportMetric(percentile(latencies, 0.99).Seconds(), "p99-s")
	b.ReportMetric(percentile(latencies, 1).Seconds(), "max-s")
	if c, err := w.store.Circuits.Get(context.Background(), hangingApp, "Stuck"); err != nil || c.State != circuit.Open || !c.Pending() {
		b.Errorf("the hanging app's circuit = %s pending %v (err %v), want open and waiting on its switch", c.State, c.Pending(), err)
	}
	b.ReportMetric(perTick("query"), "queries/tick")
	b.ReportMetric(ticks/elapsed.Seconds(), "ticks/s")
	b.ReportMetric(0, "ns/op")
	b.Logf("calls during the probes (%0.f s): %v", elapsed.Seconds(), diff(before, after))
}

func diff(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// BenchmarkTickQueries is P3: storage queries and rows read by one
// evaluator tick with 1,000 circuits of which 10 are failing, against the
// same tick with no circuit failing.
//
//	go test ./internal/bench -run '^$' -bench TickQueries
func BenchmarkTickQueries(b *testing.B) {
	for _, failing := range []int{0, 10} {
		b.Run(fmt.Sprintf("failing=%d", failing), func(b *testing.B) {
			w := newWorld(b, 1000, 1_000_000)
			now := time.Now()
			for i := range failing {
				var reports []storage.Report
				for s := range 30 {
					reports = append(reports, storage.Report{App: "bench", Function: fmt.Sprintf("F%04d", i), Second: now.Add(-time.Duration(s) * time.Second), Count: 3})
				}
				if err := w.store.Failures.Record(context.Background(), "w", reports); err != nil {
					b.Fatal(err)
				}
			}
			eval := circuit.NewEvaluator(storage.EvaluatorStore{Store: w.store}, w.switchd, circuit.EvaluatorSettings{})
			f := lease.Fence{Lease: "evaluator", Generation: 1}
			if err := eval.Tick(context.Background(), f); err != nil { // the first, full read
				b.Fatal(err)
			}
			before := w.calls.snapshot()
			n := 0
			for b.Loop() {
				if err := eval.Tick(context.Background(), f); err != nil {
					b.Fatal(err)
				}
				n++
			}
			d := diff(before, w.calls.snapshot())
			failuresQueries := d["query "+w.svc.TableName(storage.TableFailures)]
			b.ReportMetric(float64(failuresQueries)/float64(n), "failure-queries/tick")
			total := 0
			for k, v := range d {
				if strings.HasPrefix(k, "query") {
					total += v
				}
			}
			b.ReportMetric(float64(total)/float64(n), "queries/tick")
		})
	}
}

// BenchmarkIngest is P2: failures accepted per second through
// POST /api/v1/failures, against plain aztables batch writes of the same
// rows to the same Azurite, with the same concurrency, in the same run.
//
//	go test ./internal/bench -run '^$' -bench Ingest -benchtime 5s
func BenchmarkIngest(b *testing.B) {
	const workers, perRequest = 4, 100
	b.Run("fusebox-http", func(b *testing.B) {
		srv := apptest.Start(b, nil)
		key, hash := auth.NewAppKey("bench")
		if err := srv.App.Store.Apps.Put(context.Background(), circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null", APIKeyHash: hash}); err != nil {
			b.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
		at := srv.Clock.Now().Format(time.RFC3339)
		var items []map[string]any
		for i := range perRequest {
			items = append(items, map[string]any{"function": fmt.Sprintf("F%04d", i), "at": at, "count": 1})
		}
		body, _ := json.Marshal(map[string]any{"failures": items})
		var sent atomic.Int64
		b.SetParallelism(workers / 2) // GOMAXPROCS is 2 here: 4 goroutines
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(string(body)))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					b.Fatalf("status %d", resp.StatusCode)
				}
				sent.Add(perRequest)
			}
		})
		b.ReportMetric(float64(sent.Load())/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("raw-aztables", func(b *testing.B) {
		svc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		name := testenv.Prefix(b) + "Raw"
		if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
			b.Fatal(err)
		}
		defer svc.DeleteTable(context.Background(), name, nil)
		client := svc.NewClient(name)
		now := time.Now().UTC()
		pk := now.Format("200601021504")
		var seq atomic.Int64
		var sent atomic.Int64
		b.SetParallelism(workers / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				writer := seq.Add(1)
				actions := make([]aztables.TransactionAction, perRequest)
				for i := range perRequest {
					e := map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprintf("bench|F%04d|%02d|raw.%d", i, now.Second(), writer),
						"App": "bench", "Function": fmt.Sprintf("F%04d", i), "Second": now.Format(time.RFC3339), "Second@odata.type": "Edm.DateTime", "Count": 1}
					data, _ := json.Marshal(e)
					actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: data}
				}
				if _, err := client.SubmitTransaction(context.Background(), actions, nil); err != nil {
					b.Fatal(err)
				}
				sent.Add(perRequest)
			}
		})
		b.ReportMetric(float64(sent.Load())/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkOverviewPage is P4: server time of the overview with 1,000
// circuits, 10 of them failing, measured as the request's round trip over
// loopback from a signed-in client.
//
//	go test ./internal/bench -run '^$' -bench OverviewPage -benchtime 200x
func BenchmarkOverviewPage(b *testing.B) {
	srv := apptest.Start(b, nil)
	ctx := context.Background()
	st := srv.App.Store
	if err := st.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Apps.Put(ctx, circuit.App{ID: hangingApp, Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: hangingApp, Function: "Stuck", Threshold: 1, Window: 30 * time.Second}); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%04d", i), Threshold: 100, Window: 30 * time.Second}); err != nil {
			b.Fatal(err)
		}
	}
	var reports []storage.Report
	for i := range 10 {
		for s := range 30 {
			reports = append(reports, storage.Report{App: "bench", Function: fmt.Sprintf("F%04d", i), Second: srv.Clock.Now().Add(-time.Duration(s) * time.Second), Count: 2})
		}
	}
	if err := st.Failures.Record(ctx, "w", reports); err != nil {
		b.Fatal(err)
	}
	time.Sleep(11 * time.Second) // circuits are long-lived: let them age past the incremental margin
	c := signIn(b, srv)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		resp, err := c.Get(srv.URL + "/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		times = append(times, time.Since(start))
	}
	b.ReportMetric(float64(percentile(times, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(times, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTripToDelivery measures, for each channel kind, the time from
// the write of a failure that crosses a circuit's threshold to the alert's
// arrival at a real receiver: an SMTP server, and HTTP servers standing in
// for Teams, Slack and a webhook receiver. The evaluator and the sender run
// on their production schedules (1 s ticks, the sender half a tick later),
// beside an app whose ARM never answers.
//
//	go test ./internal/bench -run '^$' -bench TripToDelivery -benchtime 1x
func BenchmarkTripToDelivery(b *testing.B) {
	const probes = 20
	w := newWorld(b, probes, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range []string{storage.TableAudit, storage.TableChannels} {
		if err := w.svc.CreateTable(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	arrivals := make(chan arrival, 1000)
	receiver := func(kind string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			arrivals <- arrival{kind: kind, fn: probeName.FindString(string(body)), at: time.Now()}
			rw.WriteHeader(http.StatusAccepted)
		}))
		b.Cleanup(srv.Close)
		return srv.URL
	}
	for _, ch := range []alerts.Channel{
		{ID: "teams", Name: "Teams", Kind: alerts.ChannelTeams, URL: receiver("teams")},
		{ID: "slack", Name: "Slack", Kind: alerts.ChannelSlack, URL: receiver("slack")},
		{ID: "hook", Name: "Hook", Kind: alerts.ChannelWebhook, URL: receiver("webhook"), Secret: alerts.NewWebhookSecret()},
	} {
		if err := w.store.Channels.Create(ctx, ch); err != nil {
			b.Fatal(err)
		}
	}
	for i := range probes {
		c, err := w.store.Circuits.Get(ctx, "bench", fmt.Sprintf("F%04d", i))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := circuit.NewService(storage.EvaluatorStore{Store: w.store}, w.store.Audit, time.Now).Update(ctx, c.AppID, c.Function,
			circuit.Settings{Threshold: c.Threshold, Window: c.Window, Recipients: []string{"oncall@example.com"}, Channels: []string{"teams", "slack", "hook"}}, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	smtp := mailtest.Start(b)
	signer, _ := alerts.NewSigner("k", map[string][]byte{"k": []byte(strings.Repeat("k", 32))})
	base, _ := url.Parse("http://fusebox.test")
	comp := mailer.Composer{Signer: signer, BaseURL: base, LinkTTL: time.Hour, Now: time.Now}
	sender := alerts.NewSender(w.store.Outbox, storage.EvaluatorStore{Store: w.store},
		mailer.SMTP{Host: "127.0.0.1", Port: smtp.Port, TLS: "none", From: "fusebox@example.com"}, comp,
		alerts.SenderSettings{Channels: w.store.Channels, Poster: notify.Poster{}, Notices: benchNotices{comp}})
	eval := circuit.NewEvaluator(storage.EvaluatorStore{Store: w.store}, w.switchd, circuit.EvaluatorSettings{ApplyTimeout: time.Hour})
	runner := &loop.Runner{}
	go runner.Work(loop.Loop{Name: "evaluator", Every: time.Second, Begin: eval.Begin, End: eval.Wait, Pass: eval.Tick})(ctx, lease.Fence{Lease: "evaluator", Generation: 1})
	go runner.Work(loop.Loop{Name: "mail_sender", Every: time.Second, Phase: 500 * time.Millisecond, Pass: sender.Pass})(ctx, lease.Fence{Lease: "mail/sender", Generation: 1})
	// One app's ARM never answers (see hangingApp).
	if err := w.store.Failures.Record(ctx, "stuck", []storage.Report{{App: hangingApp, Function: "Stuck", Second: time.Now(), Count: 2}}); err != nil {
		b.Fatal(err)
	}

	kinds := []string{"mail", "teams", "slack", "webhook"}
	latencies := map[string][]time.Duration{}
	for b.Loop() {
		clear(latencies)
		for p := range probes {
			fn := fmt.Sprintf("F%04d", p)
			time.Sleep(time.Duration(p*53%1000) * time.Millisecond) // land anywhere in the tick
			if err := w.store.Failures.Record(ctx, "probe", []storage.Report{{App: "bench", Function: fn, Second: time.Now(), Count: 101}}); err != nil {
				b.Fatal(err)
			}
			written := time.Now()
			pending := map[string]bool{"teams": true, "slack": true, "webhook": true}
			deadline := time.After(30 * time.Second)
			for len(pending) > 0 {
				select {
				case a := <-arrivals:
					if a.fn == fn && pending[a.kind] {
						delete(pending, a.kind)
						latencies[a.kind] = append(latencies[a.kind], a.at.Sub(written))
					}
				case <-deadline:
					b.Fatalf("no alert to %v for %s 30 s after its crossing failure", pending, fn)
				}
			}
			m, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, " "+fn+" ") }, 30*time.Second)
			if !ok {
				b.Fatalf("no mail for %s 30 s after its crossing failure", fn)
			}
			latencies["mail"] = append(latencies["mail"], m.At.Sub(written))
		}
	}
	for _, k := range kinds {
		b.ReportMetric(percentile(latencies[k], 0.5).Seconds(), k+"-p50-s")
		b.ReportMetric(slices.Max(latencies[k]).Seconds(), k+"-max-s")
	}
	b.ReportMetric(0, "ns/op")
}

var probeName = regexp.MustCompile(`F\d{4}`)

type arrival struct {
	kind, fn string
	at       time.Time
}

// benchNotices writes notices about circuits only: the benchmark has no jobs.
type benchNotices struct{ mailer.Composer }

func (benchNotices) JobNotice(context.Context, alerts.Message) (alerts.Notice, error) {
	return alerts.Notice{}, errors.New("bench: no jobs")
}
