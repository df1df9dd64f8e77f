// Package loop runs Fusebox's background loops one way: each pass starts on
// the next multiple of the loop's period, is observed in metrics, and is
// recorded as a run of the loop's own job (so a loop that stops is a gap on
// the Jobs page like any other job's), and a pass that does not finish in
// time gives up the loop's lease so that another instance takes over.
//
// What it does not do: stop a pass that ignores its context. Such a pass
// keeps its goroutine, but its context is cancelled and its writes carry a
// fence the next holder's writes make stale.
package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/telemetry"
)

// Loop is one kind of background work.
type Loop struct {
	Name  string        // for metrics and logs: evaluator, mail_sender...
	JobID string        // the job its passes are recorded as; "" records none
	Every time.Duration // a pass starts on each multiple of Every (UTC)...
	// Phase shifts the passes: they start Phase after each multiple. The
	// mail sender runs half a second after the evaluator, so a trip is
	// mailed on the pass that follows it rather than one period later.
	Phase time.Duration
	// RecordEvery bounds how often a pass is recorded as a run: the first
	// pass of each RecordEvery period is. Default Every.
	RecordEvery time.Duration
	// Deadline is how long a pass may run before the holder gives up its
	// lease. Default ten periods, at least 30s.
	Deadline time.Duration
	// Begin, if set, starts each tenure (fresh memory after a takeover);
	// End, if set, finishes it.
	Begin func()
	End   func()
	Pass  func(ctx context.Context, f lease.Fence) error
	// Early, if set, starts a pass before its time: when a report may have
	// changed a circuit, the evaluator ticks at once rather than at the
	// next second. A woken pass starts at least WakeGap (default 100ms)
	// after the previous one started, so a stream of wakes costs at most
	// one pass per WakeGap.
	Early   <-chan struct{}
	WakeGap time.Duration
}

// Recorder records a pass as a run of the loop's job.
type Recorder interface {
	RecordPass(ctx context.Context, jobID string, at time.Time, passErr error) error
}

// Observer is told of every pass, for metrics.
type Observer interface {
	ObserveLoop(loop string, at time.Time, err error)
}

// Health is what the dashboard and /readyz learn of a loop on this instance.
type Health struct {
	Name      string
	Every     time.Duration
	Running   bool      // this instance holds the loop's lease
	LastPass  time.Time // when its last pass finished
	LastOK    time.Time
	LastError string
}

// Runner runs loops. Zero fields take no-op defaults.
type Runner struct {
	Clock    clock.Clock
	Logger   *slog.Logger
	Observer Observer
	Recorder Recorder

	mu     sync.Mutex
	health map[string]*Health
}

// ErrOverran is why a holder stepped down: a pass ran past its deadline.
var ErrOverran = errors.New("loop: a pass ran past its deadline")

// Work returns the function to run under the loop's lease.
func (r *Runner) Work(l Loop) func(ctx context.Context, f lease.Fence) error {
	if l.RecordEvery <= 0 {
		l.RecordEvery = l.Every
	}
	if l.Deadline <= 0 {
		l.Deadline = max(10*l.Every, 30*time.Second)
	}
	return func(ctx context.Context, f lease.Fence) error {
		r.set(l, func(h *Health) { h.Running = true })
		defer r.set(l, func(h *Health) { h.Running = false })
		if l.Begin != nil {
			l.Begin()
		}
		if l.End != nil {
			defer l.End()
		}
		var recorded time.Time
		for {
			started := time.Now()
			// A span per pass: what the pass calls (storage, ARM, SMTP) is
			// traced under it, and its log lines carry its trace_id.
			passCtx, span := telemetry.Tracer().Start(ctx, "loop "+l.Name)
			err := r.pass(passCtx, l, f)
			if err != nil {
				span.SetStatus(codes.Error, "pass failed")
			}
			span.End()
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, lease.ErrFenced) {
				return err // someone newer is in charge
			}
			now := r.clock().Now()
			if errors.Is(err, ErrOverran) {
				r.logger().ErrorContext(passCtx, "loop pass overran its deadline; giving up the lease", "loop", l.Name, "deadline", l.Deadline.String())
				r.observe(l, now, err)
				return fmt.Errorf("%w: %w", lease.ErrStepDown, err)
			}
			r.observe(l, now, err)
			if err != nil {
				r.logger().WarnContext(passCtx, "loop pass failed", "loop", l.Name, "error", err)
			}
			if slot := now.Truncate(l.RecordEvery); l.JobID != "" && r.Recorder != nil && !slot.Equal(recorded) {
				if rerr := r.Recorder.RecordPass(ctx, l.JobID, now, err); rerr != nil {
					if ctx.Err() == nil {
						r.logger().Warn("could not record a loop's pass", "loop", l.Name, "error", rerr)
					}
				} else {
					recorded = slot
				}
			}
			if err := r.wait(ctx, l, started); err != nil {
				return nil
			}
		}
	}
}

// wait sleeps until the loop's next start, or until it is woken, but not
// sooner than WakeGap after the pass that started at started (real time).
func (r *Runner) wait(ctx context.Context, l Loop, started time.Time) error {
	if l.Early == nil {
		return r.clock().Sleep(ctx, untilNext(r.clock().Now(), l.Every, l.Phase))
	}
	gap := l.WakeGap
	if gap <= 0 {
		gap = 100 * time.Millisecond
	}
	// The gap bounds a cost (storage reads, CPU), so it is real time even
	// under a fake clock, as the pass deadline is.
	if rest := gap - time.Since(started); rest > 0 {
		if err := (clock.Real{}).Sleep(ctx, rest); err != nil {
			return err
		}
	}
	// The sleep runs aside and this goroutine takes the wake itself, so a
	// wake that comes as the sleep ends stays in the channel for the next
	// wait rather than being taken and dropped.
	sleep, stop := context.WithCancel(ctx)
	defer stop()
	slept := make(chan error, 1)
	go func() { slept <- r.clock().Sleep(sleep, untilNext(r.clock().Now(), l.Every, l.Phase)) }()
	select {
	case <-l.Early:
		return nil
	case err := <-slept:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
}

// untilNext is the wait from now to the next start: a multiple of every,
// plus phase.
func untilNext(now time.Time, every, phase time.Duration) time.Duration {
	next := now.Add(-phase).Truncate(every).Add(every).Add(phase)
	return next.Sub(now)
}

// pass runs one pass under the loop's deadline, measured on the real
// clock: a watchdog for a stuck pass, not part of the domain's time. The
// pass gets the tenure's context, which work it starts may outlive the
// pass with; when a pass overruns, Work returns and the lease's Run ends
// that context.
func (r *Runner) pass(ctx context.Context, l Loop, f lease.Fence) error {
	done := make(chan error, 1)
	go func() { done <- l.Pass(ctx, f) }()
	t := time.NewTimer(l.Deadline)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return ErrOverran
	}
}

func (r *Runner) observe(l Loop, at time.Time, err error) {
	if r.Observer != nil {
		r.Observer.ObserveLoop(l.Name, at, err)
	}
	r.set(l, func(h *Health) {
		h.LastPass = at
		if err != nil {
			h.LastError = err.Error()
		} else {
			h.LastOK, h.LastError = at, ""
		}
	})
}

func (r *Runner) set(l Loop, change func(*Health)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.health == nil {
		r.health = map[string]*Health{}
	}
	h := r.health[l.Name]
	if h == nil {
		h = &Health{Name: l.Name, Every: l.Every}
		r.health[l.Name] = h
	}
	change(h)
}

// Health returns what this instance knows of a loop.
func (r *Runner) Health(name string) (Health, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.health[name]
	if !ok {
		return Health{Name: name}, false
	}
	return *h, true
}

func (r *Runner) clock() clock.Clock {
	if r.Clock == nil {
		return clock.Real{}
	}
	return r.Clock
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}
