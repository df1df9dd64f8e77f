package loop_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/loop"
)

type recorder struct {
	mu   sync.Mutex
	runs []time.Time
	errs []error
}

func (r *recorder) RecordPass(_ context.Context, _ string, at time.Time, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs, r.errs = append(r.runs, at), append(r.errs, err)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// Passes start on each multiple of the period; a run is recorded once per
// RecordEvery, with the pass's outcome.
func TestPassesAreAlignedAndRecordedOncePerPeriod(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 400_000_000, time.UTC))
	rec := &recorder{}
	r := &loop.Runner{Clock: clk, Recorder: rec}
	var mu sync.Mutex
	var starts []time.Time
	passes := make(chan struct{}, 100)
	work := r.Work(loop.Loop{Name: "test", JobID: "job", Every: time.Second, RecordEvery: 10 * time.Second, Pass: func(context.Context, lease.Fence) error {
		mu.Lock()
		starts = append(starts, clk.Now())
		n := len(starts)
		mu.Unlock()
		passes <- struct{}{}
		if n == 3 {
			return errors.New("storage is down")
		}
		return nil
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- work(ctx, lease.Fence{}) }()
	for range 25 {
		<-passes
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second - time.Duration(clk.Now().Nanosecond())) // to the next whole second
	}
	<-passes
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Work returned %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, s := range starts[1:] {
		if s.Nanosecond() != 0 {
			t.Errorf("pass %d started at %s, not on a whole second", i+2, s.Format("15:04:05.000"))
		}
	}
	// 26 passes from 09:00:00.4 to 09:00:25: periods 09:00:00, :10 and :20.
	if n := rec.count(); n != 3 {
		t.Errorf("%d runs recorded, want 3 (one per 10 s)", n)
	}
	if h, _ := r.Health("test"); h.LastOK.IsZero() || h.LastError != "" {
		t.Errorf("health = %+v, want a last success and no error", h)
	}
}

// A pass that never returns makes the holder step down after the deadline,
// so another instance can take the lease.
func TestAStuckPassGivesUpTheLease(t *testing.T) {
	r := &loop.Runner{}
	work := r.Work(loop.Loop{Name: "stuck", Every: time.Second, Deadline: 200 * time.Millisecond, Pass: func(ctx context.Context, _ lease.Fence) error {
		<-ctx.Done() // a call that hangs until its context ends
		return ctx.Err()
	}})
	start := time.Now()
	err := work(t.Context(), lease.Fence{})
	if !errors.Is(err, lease.ErrStepDown) || !errors.Is(err, loop.ErrOverran) {
		t.Fatalf("Work returned %v, want a step-down for an overrun", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stepped down after %s, deadline 200ms", took)
	}
	if h, _ := r.Health("stuck"); h.Running || h.LastError == "" {
		t.Errorf("health = %+v, want not running, with the overrun as its last error", h)
	}
}

func TestPhaseShiftsThePasses(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 100_000_000, time.UTC))
	starts := make(chan time.Time, 10)
	work := (&loop.Runner{Clock: clk}).Work(loop.Loop{Name: "phased", Every: time.Second, Phase: 500 * time.Millisecond, Pass: func(context.Context, lease.Fence) error {
		starts <- clk.Now()
		return nil
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go work(ctx, lease.Fence{})
	<-starts // the first pass, at once
	for _, want := range []string{"09:00:00.500", "09:00:01.500"} {
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(100 * time.Millisecond)
		for clk.Now().Format("15:04:05.000") < want {
			if err := clk.BlockUntil(ctx, 1); err != nil {
				t.Fatal(err)
			}
			clk.Advance(100 * time.Millisecond)
		}
		if got := (<-starts).Format("15:04:05.000"); got != want {
			t.Errorf("pass at %s, want %s", got, want)
		}
	}
}
