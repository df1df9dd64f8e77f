// Package clock lets code that waits be driven by tests. Production code
// takes a Clock and uses Real; tests use Fake and move time by hand.
package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	// Now is the current time. Real's carries a monotonic reading, so
	// Sub between two Now values measures elapsed time, not wall time.
	Now() time.Time
	// Sleep waits for d to pass, or for ctx to end, whose error it returns.
	Sleep(ctx context.Context, d time.Duration) error
}

// Real is the system clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan struct{}
}

// NewFake starts a fake clock at t.
func NewFake(t time.Time) *Fake {
	f := &Fake{now: t}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Sleep returns when Advance moves the clock to or past now+d, or when
// ctx ends; a sleeper that leaves early stops counting as a waiter.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	f.mu.Lock()
	w := waiter{at: f.now.Add(d), ch: make(chan struct{}, 1)}
	f.waiters = append(f.waiters, w)
	f.cond.Broadcast()
	f.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.waiters {
			if x.ch == w.ch {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				break
			}
		}
		return ctx.Err()
	}
}

// Advance moves the clock forward and fires every waiter that is due, in
// order of their due times.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			w.ch <- struct{}{}
		} else {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
	f.cond.Broadcast()
}

// Waiters is how many sleepers are waiting.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits until at least n sleepers are waiting: the point
// where every goroutine under test is idle, waiting for time to pass. It
// returns the context's error if that never happens.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cond.Broadcast()
	})
	defer stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.waiters) < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		f.cond.Wait()
	}
	return nil
}
