package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
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
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/loop"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/internal/wording"
	"github.com/fusebox/fusebox/migrations"
)

// world is a migrated storage account with nCircuits circuits on one app
// whose switch records when it is called.
type world struct {
	store   *storage.Store
	svc     *tablestore.Service
	prefix  string
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

// observeRows counts rows read, as "rows <table>".
func (c *callCounter) observeRows(table string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.table["rows "+table] += n
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
	mu      sync.Mutex
	off     map[string]time.Time
	waiters map[string]chan struct{} // closed when the function is switched off
	offs    map[string]int           // calls that switched each function off
	last    string                   // the instance that made the last call (as)
}

// as is the switch as one instance calls it: the calls are recorded as
// that instance's.
func (s *recordingSwitch) as(instance string) circuit.Switch { return callerSwitch{s, instance} }

type callerSwitch struct {
	*recordingSwitch
	instance string
}

func (c callerSwitch) Apply(ctx context.Context, app circuit.App, off map[string]bool) error {
	if app.ID != hangingApp {
		c.mu.Lock()
		c.last = c.instance
		c.mu.Unlock()
	}
	return c.recordingSwitch.Apply(ctx, app, off)
}

func (s *recordingSwitch) lastCaller() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// doubled counts the functions switched off by more than one call.
func (s *recordingSwitch) doubled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.offs {
		if c > 1 {
			n++
		}
	}
	return n
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
		if disabled {
			if s.offs == nil {
				s.offs = map[string]int{}
			}
			s.offs[function]++
		}
		if _, ok := s.off[function]; disabled && !ok {
			s.off[function] = time.Now()
			if w, ok := s.waiters[function]; ok {
				close(w)
				delete(s.waiters, function)
			}
		}
	}
	return nil
}

// hangingApp's switch never answers: P1 measures the other app's trips
// while one of its circuits waits on it.
const hangingApp = "hanging"

// waitOff waits until function is switched off, up to timeout, and says
// when that was.
func (s *recordingSwitch) waitOff(function string, timeout time.Duration) (time.Time, bool) {
	s.mu.Lock()
	if t, ok := s.off[function]; ok {
		s.mu.Unlock()
		return t, true
	}
	if s.waiters == nil {
		s.waiters = map[string]chan struct{}{}
	}
	w, ok := s.waiters[function]
	if !ok {
		w = make(chan struct{})
		s.waiters[function] = w
	}
	s.mu.Unlock()
	select {
	case <-w:
	case <-time.After(timeout):
		return time.Time{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.off[function], true
}

func newWorld(b *testing.B, nCircuits, threshold int) *world {
	return newWorldWith(b, nCircuits, threshold, circuit.Rule{})
}

func newWorldWith(b *testing.B, nCircuits, threshold int, rule circuit.Rule) *world {
	b.Helper()
	calls := &callCounter{byOp: map[string]int{}, table: map[string]int{}}
	prefix := testenv.Prefix(b)
	svc, err := tablestore.NewFromConnectionString(testenv.ConnectionString(b), tablestore.Options{Prefix: prefix, Observe: calls.observe, ObserveRows: calls.observeRows})
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
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: hangingApp, Function: "Stuck", Settings: circuit.Settings{Threshold: 1, Window: 30 * time.Second}}); err != nil {
		b.Fatal(err)
	}
	putCircuits(b, st, nCircuits, threshold, rule)
	agePastMargin()
	return &world{store: st, svc: svc, prefix: prefix, calls: calls, switchd: &recordingSwitch{off: map[string]time.Time{}}}
}

// agePastMargin lets rows just written age past the margin of the
// incremental reads (10 s), as long-lived circuits have in a running
// installation. Not a synchronisation: the rows' age is the condition, and
// the storage's clock alone measures it.
func agePastMargin() { time.Sleep(11 * time.Second) }

// putCircuits stores app bench's circuits F0000 to F<n-1>, with eight
// writers: 10,000 circuits take a while.
func putCircuits(b *testing.B, st *storage.Store, n, threshold int, rule circuit.Rule) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if err := st.Circuits.Put(context.Background(), circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%04d", i), Settings: circuit.Settings{Threshold: threshold, Window: 30 * time.Second, Rule: rule}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
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

// probeSpacing separates the launches of P1's probes: not a divisor of a
// second, so probes land at every point of the evaluator's tick, and a few
// cross their thresholds in each second, as in a real burst.
const probeSpacing = 263 * time.Millisecond

func tripLatency(b *testing.B, ratio bool) {
	const nCircuits, probes = 1000, 100
	w, background, probe := p1World(b, nCircuits, ratio)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eval := circuit.NewEvaluator(w.store.Breaker(), w.switchd, circuit.EvaluatorSettings{Claims: claims(b, w.store, "bench"), ApplyTimeout: time.Hour})
	run := (&loop.Runner{}).Work(loop.Loop{Name: "evaluator", Every: time.Second, Begin: eval.Begin, End: eval.Wait, Pass: eval.Tick})
	done := make(chan error, 1)
	go func() { done <- run(ctx, lease.Fence{Lease: "evaluator", Generation: 1}) }()
	// One app's ARM never answers: its circuit trips and its switch call
	// hangs for the whole run.
	if err := w.store.Failures.Record(ctx, "stuck", []storage.Report{{App: hangingApp, Function: "Stuck", Second: time.Now(), Count: 2}}); err != nil {
		b.Fatal(err)
	}
	stopLoad := backgroundLoad(ctx, b, w.store, nCircuits, background)
	waitTicks(ctx, b, w.store, 3) // the load and the evaluator in a steady state

	before := w.calls.snapshot()
	tickStart := time.Now()
	var latencies []time.Duration
	for b.Loop() {
		latencies = runProbes(ctx, b, w, probes, probe, nil)
	}
	elapsed := time.Since(tickStart)
	after := w.calls.snapshot()
	cancel()
	stopLoad()
	<-done
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
	reportLatencies(b, latencies)
	if c, err := w.store.Circuits.Get(context.Background(), hangingApp, "Stuck"); err != nil || c.State != circuit.Open || !c.Pending() {
		b.Errorf("the hanging app's circuit = %s pending %v (err %v), want open and waiting on its switch", c.State, c.Pending(), err)
	}
	b.ReportMetric(perTick("query"), "queries/tick")
	b.ReportMetric(perTick("rows"), "rows/tick")
	b.ReportMetric(ticks/elapsed.Seconds(), "ticks/s")
	reportPeakRSS(b)
	b.Logf("calls during the probes (%0.f s): %v", elapsed.Seconds(), diff(before, after))
}

// p1World is P1's storage: nCircuits circuits with a count rule (more than
// 100 in 30 s) or a ratio rule (60 % once 100 calls), the background each
// circuit gets per second, and the report that pushes a probe over.
func p1World(b *testing.B, nCircuits int, ratio bool) (*world, storage.Report, storage.Report) {
	if ratio {
		return newWorldWith(b, nCircuits, 100, circuit.Rule{Ratio: 0.6, MinCalls: 100}), storage.Report{Count: 1, Successes: 1}, storage.Report{Count: 200}
	}
	return newWorld(b, nCircuits, 100), storage.Report{Count: 2}, storage.Report{Count: 101}
}

// backgroundLoad writes per, per circuit and second, as 4 instances each
// flushing once a second (2,000 failures/s with the count rule's 2), never
// enough to trip. The returned func stops it and fails on a write error.
func backgroundLoad(ctx context.Context, b *testing.B, st *storage.Store, nCircuits int, per storage.Report) func() {
	ctx, cancel := context.WithCancel(ctx)
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
						reports = append(reports, storage.Report{App: "bench", Function: fmt.Sprintf("F%04d", i), Second: now, Count: per.Count, Successes: per.Successes})
					}
					if err := st.Failures.Record(ctx, writer, reports); err != nil && ctx.Err() == nil {
						loadErr.Store(err)
					}
				}
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
		if err, _ := loadErr.Load().(error); err != nil {
			b.Fatalf("background load: %v", err)
		}
	}
}

// runProbes pushes probes circuits over their thresholds, one launched
// every probeSpacing, and returns each one's latency from the return of its
// crossing write to the switch call. launched, when set, is told each
// probe's index as it is launched.
func runProbes(ctx context.Context, b *testing.B, w *world, probes int, probe storage.Report, launched func(int)) []time.Duration {
	latencies := make([]time.Duration, probes)
	errs := make(chan error, probes)
	var wg sync.WaitGroup
	tick := time.NewTicker(probeSpacing)
	defer tick.Stop()
	for p := range probes {
		if p > 0 {
			<-tick.C
		}
		if launched != nil {
			launched(p)
		}
		wg.Go(func() {
			fn := fmt.Sprintf("F%04d", p)
			if err := w.store.Failures.Record(ctx, fmt.Sprintf("probe-%d", p), []storage.Report{{App: "bench", Function: fn, Second: time.Now(), Count: probe.Count}}); err != nil {
				errs <- err
				return
			}
			written := time.Now()
			at, ok := w.switchd.waitOff(fn, time.Minute)
			if !ok {
				errs <- fmt.Errorf("%s not tripped a minute after its crossing failure", fn)
				return
			}
			latencies[p] = at.Sub(written)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return latencies
}

// reportLatencies reports the median, the 99th percentile by nearest rank
// and the maximum, which is every run's worst trip, never a second-worst.
func reportLatencies(b *testing.B, ds []time.Duration) {
	b.ReportMetric(percentile(ds, 0.5).Seconds(), "p50-s")
	b.ReportMetric(percentile(ds, 0.99).Seconds(), "p99-s")
	b.ReportMetric(slices.Max(ds).Seconds(), "max-s")
	b.ReportMetric(float64(len(ds)), "probes")
	b.ReportMetric(0, "ns/op")
}

// claims is the switch-claim Locker of one benchmark instance.
func claims(b *testing.B, st *storage.Store, identity string) *lease.Locker {
	l, err := lease.NewClaims(st.Leases, identity, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkTripLatencyFailover is P1 while an instance dies: two
// instances run as Fusebox runs them (each evaluates, ticking at its own
// phase of the second; switch calls under per-app claims; one keeps the
// books under the evaluator lease with the default timing, 15 s). Ten
// probes into the run, the instance that made the last switch call (so the
// likeliest to hold the app's claim) is cut off from storage at a random
// point of its work. Probes are written to the table directly, as other
// writers do (docs/storage.md): no report wakes a tick, the slowest path.
// It reports every probe's latency, those over 3 s, the storage
// operations per second of both instances during the probes, and when the
// books moved.
//
//	go test ./internal/bench -run '^$' -bench TripLatencyFailover -benchtime 1x
func BenchmarkTripLatencyFailover(b *testing.B) {
	const nCircuits, probes, cutAt = 1000, 100, 10
	w, background, probe := p1World(b, nCircuits, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type instance struct {
		name  string
		link  *cuttable
		calls *callCounter
	}
	start := func(name string, phase time.Duration) instance {
		link := &cuttable{}
		calls := &callCounter{byOp: map[string]int{}, table: map[string]int{}}
		svc, err := tablestore.NewFromConnectionString(testenv.ConnectionString(b), tablestore.Options{Prefix: w.prefix, Transport: link, Observe: calls.observe})
		if err != nil {
			b.Fatal(err)
		}
		st := storage.New(svc)
		l, err := lease.New(st.Leases, lease.Settings{Identity: name})
		if err != nil {
			b.Fatal(err)
		}
		var books atomic.Pointer[lease.Fence]
		eval := circuit.NewEvaluator(st.Breaker(), w.switchd.as(name), circuit.EvaluatorSettings{Claims: claims(b, st, name), ApplyTimeout: time.Hour})
		go func() {
			_ = l.Run(ctx, "evaluator", func(ctx context.Context, f lease.Fence) error {
				books.Store(&f)
				<-ctx.Done()
				books.Store(nil)
				return nil
			})
		}()
		work := (&loop.Runner{}).Work(loop.Loop{Name: "evaluator", Every: time.Second, Phase: phase, Begin: eval.Begin, End: eval.Wait, Early: eval.EarlyTicks(),
			Pass: func(ctx context.Context, _ lease.Fence) error {
				f := lease.Fence{}
				if p := books.Load(); p != nil {
					f = *p
				}
				return eval.Tick(ctx, f)
			}})
		go func() { _ = work(ctx, lease.Fence{}) }()
		return instance{name, link, calls}
	}
	phase := time.Duration(rand.Int64N(int64(time.Second)))
	instances := map[string]instance{}
	for i, name := range []string{"bench/a", "bench/b"} {
		instances[name] = start(name, (phase+time.Duration(i)*500*time.Millisecond)%time.Second)
	}
	if _, ok := waitHolder(ctx, w.store, "bench/a", "bench/b"); !ok {
		b.Fatal("no instance took the evaluator lease within a minute")
	}
	stopLoad := backgroundLoad(ctx, b, w.store, nCircuits, background)
	waitTicks(ctx, b, w.store, 3)

	var latencies []time.Duration
	var cut time.Time
	var victim instance
	var before map[string]int
	booksMoved := make(chan time.Time, 1)
	for b.Loop() {
		before = map[string]int{}
		for _, in := range instances {
			for k, v := range in.calls.snapshot() {
				before[k] += v
			}
		}
		latencies = runProbes(ctx, b, w, probes, probe, func(p int) {
			if p != cutAt {
				return
			}
			// A random point of the victim's work: up to one tick after
			// this probe's launch.
			time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
			victim = instances[w.switchd.lastCaller()]
			victim.link.cut.Store(true)
			cut = time.Now()
			go func() {
				other := "bench/a"
				if victim.name == other {
					other = "bench/b"
				}
				at, _ := waitHolder(ctx, w.store, other)
				booksMoved <- at
			}()
		})
	}
	elapsed := time.Since(cut) // the probes after the cut, and the cut's probe
	after := map[string]int{}
	for _, in := range instances {
		for k, v := range in.calls.snapshot() {
			after[k] += v
		}
	}
	moved := <-booksMoved
	cancel()
	stopLoad()
	reportLatencies(b, latencies)
	late := 0
	for _, d := range latencies {
		if d > 3*time.Second {
			late++
		}
	}
	ops := 0
	for _, v := range diff(before, after) {
		ops += v
	}
	b.ReportMetric(float64(late), "probes-over-3s")
	b.ReportMetric(float64(w.switchd.doubled()), "switched-twice")
	b.ReportMetric(float64(ops)/(elapsed.Seconds()+float64(cutAt)*probeSpacing.Seconds()), "storage-ops/s")
	if !moved.IsZero() {
		b.ReportMetric(moved.Sub(cut).Seconds(), "books-moved-s")
	}
	b.Logf("cut %s; calls by both instances during the probes: %v", victim.name, diff(before, after))
	reportPeakRSS(b)
}

// waitHolder waits until one of holders holds the evaluator lease and says
// when it was seen.
func waitHolder(ctx context.Context, st *storage.Store, holders ...string) (time.Time, bool) {
	deadline := time.Now().Add(time.Minute)
	for {
		if rec, err := st.Leases.Get(ctx, "evaluator"); err == nil && slices.Contains(holders, rec.Holder) {
			return time.Now(), true
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		time.Sleep(20 * time.Millisecond) // poll, bounded by the deadline
	}
}

// waitTicks waits until the evaluator has reported n more ticks (it writes
// its status on every tick), so measuring starts with the background load
// flowing through it.
func waitTicks(ctx context.Context, b *testing.B, st *storage.Store, n int) {
	seen, last := 0, time.Time{}
	deadline := time.Now().Add(time.Minute)
	for seen <= n {
		if status, err := st.Status.Evaluator(ctx); err == nil && status.LastTickAt.After(last) {
			seen, last = seen+1, status.LastTickAt
		}
		if time.Now().After(deadline) {
			b.Fatalf("the evaluator reported %d ticks in a minute, want %d", seen, n)
		}
		time.Sleep(50 * time.Millisecond) // poll, bounded by the deadline
	}
}

// cuttable is an HTTP transport to Azurite whose link can be cut, as a
// dying instance's is.
type cuttable struct{ cut atomic.Bool }

func (c *cuttable) Do(req *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("dial tcp: connection refused (cut by the benchmark)")
	}
	return http.DefaultClient.Do(req)
}

// reportPeakRSS reports the benchmark process's peak resident memory
// (VmHWM). The process holds Fusebox's code under test and the load
// generator both, so it bounds Fusebox's own from above.
func reportPeakRSS(b *testing.B) {
	if kb := procStatus("VmHWM"); kb > 0 {
		b.ReportMetric(float64(kb)/1024, "peak-rss-MB")
	}
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

// BenchmarkTickQueries is P3: storage queries (pages) and rows read by an
// evaluator tick with 10, 1,000 and 10,000 circuits, 10 of them failing:
// each gets 3 failures a second from a writer while the evaluator ticks
// once a second, as in production. The cost must follow the failing
// circuits, not the healthy ones: from 10 to 10,000 circuits the rows read
// per tick should stay about the same. The full reread every minute is
// reported apart (full-read-rows); it does grow with the circuits.
//
//	go test ./internal/bench -run '^$' -bench TickQueries -benchtime 20x
func BenchmarkTickQueries(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("circuits=%d", n), func(b *testing.B) {
			const failing = 10
			w := newWorld(b, n, 1_000_000)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			write := func(at time.Time) {
				var reports []storage.Report
				for i := range failing {
					reports = append(reports, storage.Report{App: "bench", Function: fmt.Sprintf("F%04d", i), Second: at, Count: 3})
				}
				if err := w.store.Failures.Record(ctx, "w", reports); err != nil && ctx.Err() == nil {
					b.Error(err)
				}
			}
			now := time.Now()
			for s := range 30 { // already failing for 30 s
				write(now.Add(-time.Duration(s) * time.Second))
			}
			eval := circuit.NewEvaluator(w.store.Breaker(), w.switchd, circuit.EvaluatorSettings{Claims: claims(b, w.store, "bench")})
			f := lease.Fence{Lease: "evaluator", Generation: 1}
			first := w.calls.snapshot()
			if err := eval.Tick(ctx, f); err != nil { // the first, full read
				b.Fatal(err)
			}
			fullRows := 0
			for k, v := range diff(first, w.calls.snapshot()) {
				if strings.HasPrefix(k, "rows") {
					fullRows += v
				}
			}
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for range 5 { // past the margin of the 30 s written at once above
				write(<-tick.C)
				if err := eval.Tick(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
			before := w.calls.snapshot()
			ticks := 0
			var tickTime time.Duration
			for b.Loop() {
				at := <-tick.C
				write(at) // this second's failures, then the tick
				started := time.Now()
				if err := eval.Tick(ctx, f); err != nil {
					b.Fatal(err)
				}
				tickTime += time.Since(started)
				ticks++
			}
			d := diff(before, w.calls.snapshot())
			sum := func(prefix string) float64 {
				total := 0
				for k, v := range d {
					if strings.HasPrefix(k, prefix) {
						total += v
					}
				}
				return float64(total) / float64(ticks)
			}
			// The writer's batches are not the evaluator's: count reads only.
			b.ReportMetric(sum("query"), "queries/tick")
			b.ReportMetric(sum("rows"), "rows/tick")
			b.ReportMetric(sum("rows "+w.svc.TableName(storage.TableCircuits)), "circuit-rows/tick")
			b.ReportMetric(sum("rows "+w.svc.TableName(storage.TableFailures)), "failure-rows/tick")
			b.ReportMetric(float64(fullRows), "full-read-rows")
			b.ReportMetric(float64(tickTime.Microseconds())/1000/float64(ticks), "tick-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkIngest is P2: failures accepted per second through
// POST /api/v1/failures, against plain aztables batch writes of the same
// rows to the same Azurite, with the same concurrency, in the same run.
//
//	go test ./internal/bench -run '^$' -bench Ingest -benchtime 5s
func BenchmarkIngest(b *testing.B) {
	// With errors, every item carries an error text (#36), and so does
	// every raw row: the texts are stored either way.
	for _, withErrors := range []bool{false, true} {
		suffix := ""
		if withErrors {
			suffix = "-errors"
		}
		b.Run("fusebox-http"+suffix, func(b *testing.B) { ingestHTTP(b, withErrors) })
		b.Run("raw-aztables"+suffix, func(b *testing.B) { ingestRaw(b, withErrors) })
	}
}

// errorText is the error an ingest benchmark's item i carries.
func errorText(i int) string {
	return fmt.Sprintf("Timeout talking to inventory after 30 s (order %d, attempt 3 of 3)", 4700+i)
}

const ingestWorkers, ingestPerRequest = 4, 100

func ingestHTTP(b *testing.B, withErrors bool) {
	const workers, perRequest = ingestWorkers, ingestPerRequest
	{
		// The store's throughput is measured, not the per-app row budget
		// (FUSEBOX_INGEST_ROW_LIMIT), which would hold one app to 500 rows a second.
		srv := apptest.Start(b, map[string]string{"FUSEBOX_INGEST_ROW_LIMIT": "10000000"})
		key, hash := auth.NewAppKey("bench")
		if err := srv.App.Store.Apps.Put(context.Background(), circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null", APIKeyHash: hash}); err != nil {
			b.Fatal(err)
		}
		// Each function has a circuit, so every item becomes a failure row
		// as the raw side writes (those of functions without one are tallied).
		for i := range perRequest {
			if err := srv.App.Store.Circuits.Put(context.Background(), circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%04d", i), Settings: circuit.Settings{Threshold: 1 << 30, Window: 30 * time.Second}}); err != nil {
				b.Fatal(err)
			}
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
		at := srv.Clock.Now().Format(time.RFC3339)
		var items []map[string]any
		for i := range perRequest {
			item := map[string]any{"function": fmt.Sprintf("F%04d", i), "at": at, "count": 1}
			if withErrors {
				item["error"] = errorText(i)
			}
			items = append(items, item)
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
	}
}

func ingestRaw(b *testing.B, withErrors bool) {
	const workers, perRequest = ingestWorkers, ingestPerRequest
	{
		client := rawTable(b)
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
					if withErrors {
						e["Sample"] = errorText(i)
					}
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
	}
}

// BenchmarkOverviewPage is P4: the overview and a failing circuit's page
// with 1,000 circuits, 10 of them failing, measured as the request's round
// trip over loopback from a signed-in client, while Fusebox runs as in
// production: the real clock, the evaluator and every other loop ticking
// against the same Azurite.
//
//	go test ./internal/bench -run '^$' -bench OverviewPage -benchtime 200x
func BenchmarkOverviewPage(b *testing.B) {
	srv := apptest.StartRealClock(b, nil)
	ctx := context.Background()
	st := srv.App.Store
	if err := st.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Apps.Put(ctx, circuit.App{ID: hangingApp, Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: hangingApp, Function: "Stuck", Settings: circuit.Settings{Threshold: 1, Window: 30 * time.Second}}); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%04d", i), Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}}); err != nil {
			b.Fatal(err)
		}
	}
	var reports []storage.Report
	for i := range 10 {
		for s := range 30 {
			reports = append(reports, storage.Report{App: "bench", Function: fmt.Sprintf("F%04d", i), Second: time.Now().Add(-time.Duration(s) * time.Second), Count: 2})
		}
	}
	if err := st.Failures.Record(ctx, "w", reports); err != nil {
		b.Fatal(err)
	}
	agePastMargin()
	c := signIn(b, srv)
	for _, page := range []struct{ name, path string }{{"overview", "/"}, {"circuit", "/circuits/bench/F0003"}} {
		b.Run(page.name, func(b *testing.B) {
			view := func() time.Duration {
				start := time.Now()
				resp, err := c.Get(srv.URL + page.path)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				return time.Since(start)
			}
			// The first view reads what no view read before (a year of
			// the audit's months, the lists), beside the start-up's
			// reads of every loop: reported apart, and the views are
			// measured from the evaluator's next tick after it.
			first, settled := view(), time.Now()
			srv.TickAfter(b, settled)
			var times []time.Duration
			for b.Loop() {
				times = append(times, view())
			}
			b.ReportMetric(ms(first), "first-ms")
			b.ReportMetric(ms(percentile(times, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(times, 0.99)), "p99-ms")
			b.ReportMetric(ms(slices.Max(times)), "max-ms")
			// The evaluator ticked throughout: its last tick is recent.
			if st, err := srv.App.Store.Status.Evaluator(context.Background()); err != nil || time.Since(st.LastTickAt) > 5*time.Second {
				b.Errorf("the evaluator was not ticking during the benchmark: last tick %s (%v)", st.LastTickAt, err)
			}
			b.ReportMetric(0, "ns/op")
			reportPeakRSS(b)
		})
	}
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
		{ID: "pd", Name: "PagerDuty", Kind: alerts.ChannelPagerDuty, URL: receiver("pagerduty") + "/v2/enqueue", Secret: "Rabcdefghijklmnopqrstuvwxyz12345"}, // no "F" and digits: probeName finds the function
		{ID: "og", Name: "Opsgenie", Kind: alerts.ChannelOpsgenie, URL: receiver("opsgenie"), Secret: "0f2c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"},
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
		if _, err := circuit.NewService(w.store.Breaker(), w.store.Audit, time.Now, circuit.ServiceSettings{}).Update(ctx, c.AppID, c.Function,
			circuit.Settings{Threshold: c.Threshold, Window: c.Window, Recipients: []string{"oncall@example.com"}, Channels: []string{"teams", "slack", "hook", "pd", "og"}}, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	smtp := mailtest.Start(b)
	signer, _ := alerts.NewSigner("k", map[string][]byte{"k": []byte(strings.Repeat("k", 32))})
	base, _ := url.Parse("http://fusebox.test")
	// The alerts name what failed, read from the failure rows as in
	// production (wording.Composer.Errors).
	comp := wording.Composer{Signer: signer, BaseURL: base, LinkTTL: time.Hour, Now: time.Now, Errors: &errortexts.Cache{Rows: w.store.Failures.Reader()}}
	sender := alerts.NewSender(w.store.Outbox, storage.Lists{Store: w.store},
		notify.SMTP{Host: "127.0.0.1", Port: smtp.Port, TLS: "none", From: "fusebox@example.com"}, comp,
		alerts.SenderSettings{Channels: w.store.Channels, Poster: notify.Poster{Egress: egress.Policy{AllowLoopback: true}}, Notices: benchNotices{comp}})
	eval := circuit.NewEvaluator(w.store.Breaker(), w.switchd, circuit.EvaluatorSettings{Claims: claims(b, w.store, "bench"), ApplyTimeout: time.Hour})
	runner := &loop.Runner{}
	go runner.Work(loop.Loop{Name: "evaluator", Every: time.Second, Begin: eval.Begin, End: eval.Wait, Pass: eval.Tick})(ctx, lease.Fence{Lease: "evaluator", Generation: 1})
	go runner.Work(loop.Loop{Name: "mail_sender", Every: time.Second, Phase: 500 * time.Millisecond, Pass: sender.Pass})(ctx, lease.Fence{Lease: "mail/sender", Generation: 1})
	// One app's ARM never answers (see hangingApp).
	if err := w.store.Failures.Record(ctx, "stuck", []storage.Report{{App: hangingApp, Function: "Stuck", Second: time.Now(), Count: 2}}); err != nil {
		b.Fatal(err)
	}

	kinds := []string{"mail", "teams", "slack", "webhook", "pagerduty", "opsgenie"}
	latencies := map[string][]time.Duration{}
	for b.Loop() {
		clear(latencies)
		for p := range probes {
			fn := fmt.Sprintf("F%04d", p)
			time.Sleep(time.Duration(p*53%1000) * time.Millisecond) // land anywhere in the tick
			// Three kinds of error, as a real burst has: the alerts name them.
			now := time.Now()
			if err := w.store.Failures.Record(ctx, "probe-1", []storage.Report{{App: "bench", Function: fn, Second: now, Count: 90, Sample: "Timeout talking to inventory after 30 s (order 4711)"}}); err != nil {
				b.Fatal(err)
			}
			if err := w.store.Failures.Record(ctx, "probe-2", []storage.Report{{App: "bench", Function: fn, Second: now, Count: 8, Sample: "Connection refused by 10.0.0.4:5432"},
				{App: "bench", Function: fn, Second: now.Add(-time.Second), Count: 3, Sample: "Deadlock on table Orders (victim 57)"}}); err != nil {
				b.Fatal(err)
			}
			written := time.Now()
			pending := map[string]bool{"teams": true, "slack": true, "webhook": true, "pagerduty": true, "opsgenie": true}
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
			if !strings.Contains(m.Text, "90 × Timeout talking to inventory") {
				b.Fatalf("the mail for %s does not name its commonest error:\n%s", fn, m.Text)
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
type benchNotices struct{ wording.Composer }

func (benchNotices) JobNotice(context.Context, alerts.Message) (alerts.Notice, error) {
	return alerts.Notice{}, errors.New("bench: no jobs")
}
