package bench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/loop"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/throttle"
)

// BenchmarkThrottleLatency is P1 for the throttle stage, through the local
// switch (local.settings.json): 1,000 circuits of one app under half P1's
// background load (1 failure per circuit and second: up to 30 in a 30 s
// window), 100 of them with a throttle stage at more than 40 failures
// (the trip stays at more than 100); each probe adds 45 failures to one of
// those, which throttle it whatever the background, and trip nothing. It reports, per probe, the time from the throttle rule firing
// (the flip) to the settings written (the circuit's applied time), and
// from the probe's write returning to the settings written, beside the
// raw cost of one read–merge–write of the same file in the same run.
//
//	go test ./internal/bench -run '^$' -bench ThrottleLatency -benchtime 1x
func BenchmarkThrottleLatency(b *testing.B) {
	const nCircuits, probes = 1000, 100
	w := newWorldWith(b, nCircuits, 100, circuit.Rule{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	settings := filepath.Join(b.TempDir(), "local.settings.json")
	if err := os.WriteFile(settings, []byte(`{"IsEncrypted": false, "Values": {"FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated", "AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize": "100"}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := w.store.Apps.Put(ctx, circuit.App{ID: "bench", Switch: circuit.SwitchLocal, LocalSettings: settings}); err != nil {
		b.Fatal(err)
	}
	for p := range probes {
		c, err := w.store.Circuits.Get(ctx, "bench", fmt.Sprintf("F%04d", p))
		if err != nil {
			b.Fatal(err)
		}
		c.EventHub, c.Throttle = "orders", circuit.Throttle{Threshold: 40}
		if err := w.store.Circuits.UpdateSettings(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	sw := &tunedAt{Router: switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}}, at: map[string]time.Time{}, wait: map[string]chan struct{}{}}
	eval := circuit.NewEvaluator(w.store.Breaker(), sw, circuit.EvaluatorSettings{Claims: claims(b, w.store, "bench")})
	run := (&loop.Runner{}).Work(loop.Loop{Name: "evaluator", Every: time.Second, Begin: eval.Begin, End: eval.Wait, Pass: eval.Tick})
	done := make(chan error, 1)
	go func() { done <- run(ctx, lease.Fence{Lease: "evaluator", Generation: 1}) }()
	stopLoad := backgroundLoad(ctx, b, w.store, nCircuits, storage.Report{Count: 1})
	waitTicks(ctx, b, w.store, 3)

	var fired, reported []time.Duration
	for b.Loop() {
		fired, reported = throttleProbes(ctx, b, w.store, sw, probes)
	}
	cancel()
	stopLoad()
	<-done

	// The raw store: one read–merge–write of the same file, as Tune does.
	raw := make([]time.Duration, probes)
	batch := "25"
	for i := range raw {
		start := time.Now()
		if err := localsettings.Tune(settings, map[string]bool{"F0000": false}, map[string]*string{throttle.EventHubMaxBatch: &batch}); err != nil {
			b.Fatal(err)
		}
		raw[i] = time.Since(start)
	}
	b.ReportMetric(percentile(fired, 0.5).Seconds()*1000, "fire-to-written-p50-ms")
	b.ReportMetric(slices.Max(fired).Seconds()*1000, "fire-to-written-max-ms")
	b.ReportMetric(percentile(reported, 0.5).Seconds()*1000, "report-to-written-p50-ms")
	b.ReportMetric(slices.Max(reported).Seconds()*1000, "report-to-written-max-ms")
	b.ReportMetric(float64(percentile(raw, 0.5).Microseconds())/1000, "raw-write-p50-ms")
	b.ReportMetric(float64(slices.Max(raw).Microseconds())/1000, "raw-write-max-ms")
	b.ReportMetric(float64(percentile(fired, 0.5))/float64(percentile(raw, 0.5)), "fire-to-written/raw-p50")
	b.ReportMetric(0, "ns/op")
}

// tunedAt is the local switch, recording when each function's settings
// write returned, so a probe waits on memory, not on polls of storage.
type tunedAt struct {
	switches.Router
	mu   sync.Mutex
	at   map[string]time.Time
	wait map[string]chan struct{}
}

func (t *tunedAt) Tune(ctx context.Context, app circuit.App, off map[string]bool, set map[string]*string) error {
	err := t.Router.Tune(ctx, app, off, set)
	if err != nil {
		return err
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for fn := range off {
		if _, ok := t.at[fn]; !ok && len(set) > 0 {
			t.at[fn] = now
			if ch, ok := t.wait[fn]; ok {
				close(ch)
			}
		}
	}
	return nil
}

func (t *tunedAt) waitFor(fn string, limit time.Duration) (time.Time, bool) {
	t.mu.Lock()
	if at, ok := t.at[fn]; ok {
		t.mu.Unlock()
		return at, true
	}
	ch, ok := t.wait[fn]
	if !ok {
		ch = make(chan struct{})
		t.wait[fn] = ch
	}
	t.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(limit):
		return time.Time{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.at[fn], true
}

// throttleProbes pushes probes circuits over their throttle rule, one every
// probeSpacing, and returns for each the time from the rule firing to its
// settings written, and from its crossing write returning to them.
func throttleProbes(ctx context.Context, b *testing.B, st *storage.Store, sw *tunedAt, probes int) (fired, reported []time.Duration) {
	fired, reported = make([]time.Duration, probes), make([]time.Duration, probes)
	errs := make(chan error, probes)
	var wg sync.WaitGroup
	tick := time.NewTicker(probeSpacing)
	defer tick.Stop()
	for p := range probes {
		if p > 0 {
			<-tick.C
		}
		wg.Go(func() {
			fn := fmt.Sprintf("F%04d", p)
			if err := st.Failures.Record(ctx, fmt.Sprintf("probe-%d", p), []storage.Report{{App: "bench", Function: fn, Second: time.Now(), Count: 45}}); err != nil {
				errs <- err
				return
			}
			written := time.Now()
			at, ok := sw.waitFor(fn, time.Minute)
			if !ok {
				errs <- fmt.Errorf("%s not throttled a minute after its crossing failures", fn)
				return
			}
			reported[p] = at.Sub(written)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	// The rule fired when the flip was decided; the settings were written
	// when the switch recorded them applied (both on this machine's clock).
	for p := range probes {
		c, err := st.Circuits.Get(ctx, "bench", fmt.Sprintf("F%04d", p))
		if err != nil || c.State != circuit.Throttled {
			b.Fatalf("F%04d: %s (%s), %v", p, c.State, c.Reason, err)
		}
		fired[p] = c.AppliedAt.Sub(c.ChangedAt)
	}
	return fired, reported
}
