// Package lease makes background work run on one Fusebox instance at a time.
//
// A lease is a named record in storage (any name: "evaluator",
// "jobs/backfill/nightly", "orders/100"). An instance acquires it with a
// conditional write, renews it in the background, and runs its work under a
// context that is cancelled the moment it can no longer be sure it holds the
// lease. Every change of holder increases the lease's generation, a fencing
// token that work carries into the writes it makes.
//
// What is guaranteed, given that clocks on different machines run at about
// the same rate (their readings are never compared):
//
//   - Acquire, renew and release are conditional on the record's version, so
//     two instances can never both succeed in taking the same record.
//   - A contender counts a lease as expired only when the record has not
//     changed for the lease's Duration by the contender's own monotonic
//     clock, measured from the moment it first saw that version.
//   - A holder measures RenewDeadline from the moment it sent its last
//     successful write, before the write could have been seen by anyone.
//     Since RenewDeadline < Duration, its work context is cancelled before
//     any contender may take over, even if storage is unreachable.
//   - A write made under an older generation of a lease is rejected by
//     Fence.Admits wherever the record carries the generation that last wrote it.
//
// What is not: a holder paused for longer than Duration - RenewDeadline (a
// stopped VM, a debugger) can act after another instance took over; fencing
// rejects such late writes only for records that the new holder has already
// written. Work should therefore be idempotent and use fenced, conditional
// writes, as the circuit evaluator and the mail outbox do.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
)

// ErrStepDown, returned (wrapped) by work run under Run, releases the lease
// and makes this instance wait a lease Duration before contending again.
var ErrStepDown = errors.New("lease: the holder stepped down")

// Errors.
var (
	ErrNotFound = errors.New("lease: no such lease")
	ErrConflict = errors.New("lease: the record changed since it was read")
	ErrHeld     = errors.New("lease: held by another holder")
	ErrLost     = errors.New("lease: lost: could not renew before the renew deadline, or another holder took over")
	ErrReleased = errors.New("lease: released")
	ErrFenced   = errors.New("lease: write made under an older generation of the lease")
)

// UnreadableError is a lease record that is in the store but does not
// decode (written by something else, or damaged): Version is its ETag, so
// that it can be replaced on condition that it stays as it is.
type UnreadableError struct {
	Version string
	Err     error
}

func (e *UnreadableError) Error() string { return "lease: unreadable record: " + e.Err.Error() }
func (e *UnreadableError) Unwrap() error { return e.Err }

// Record is a lease as stored.
type Record struct {
	Name       string
	Holder     string // empty when released
	Generation int64  // increases by one on every change of holder
	Duration   time.Duration
	AcquiredAt time.Time // the holder's clock; for people, never for decisions
	RenewedAt  time.Time // likewise
	Version    string    // opaque; Update succeeds only while it is unchanged
}

// Store keeps lease records. Update must be conditional on Version and
// report a changed record as ErrConflict and a missing one as ErrNotFound;
// Create reports an existing record as ErrConflict.
type Store interface {
	Get(ctx context.Context, name string) (Record, error)
	Create(ctx context.Context, r Record) (Record, error)
	Update(ctx context.Context, r Record) (Record, error)
	List(ctx context.Context) ([]Record, error)
}

// Observer is told what happens to leases, for metrics.
type Observer interface {
	Acquired(name string)
	Lost(name string)
	Renewed(name string, elapsed time.Duration, err error)
}

// Settings tune a Locker. Zero values take the documented defaults.
type Settings struct {
	// Identity names this holder; it must differ between processes.
	// Default: host name, process id and a random suffix.
	Identity string
	// Duration is how long a record may go unchanged before contenders
	// take it over. Default 15s.
	Duration time.Duration
	// RenewDeadline is how long a holder keeps acting without a successful
	// renewal. Must be shorter than Duration. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is how often holders renew and contenders retry, with up
	// to 20% jitter for contenders. Must be shorter than RenewDeadline. Default 2s.
	RetryPeriod time.Duration
	Clock       clock.Clock
	Observer    Observer
	Logger      *slog.Logger
}

// Locker acquires leases for one holder identity.
type Locker struct {
	store Store
	s     Settings

	mu       sync.Mutex
	observed map[string]observation // per lease: the version last seen, and when
	active   map[string]bool        // leases this Locker holds now
}

type observation struct {
	version string
	at      time.Time
}

// New checks settings and fills defaults.
func New(store Store, s Settings) (*Locker, error) {
	if s.Duration == 0 {
		s.Duration = 15 * time.Second
	}
	if s.RenewDeadline == 0 {
		s.RenewDeadline = 10 * time.Second
	}
	if s.RetryPeriod == 0 {
		s.RetryPeriod = 2 * time.Second
	}
	var problems []error
	if s.RetryPeriod <= 0 {
		problems = append(problems, errors.New("lease: RetryPeriod must be positive"))
	}
	if s.RenewDeadline <= s.RetryPeriod {
		problems = append(problems, fmt.Errorf("lease: RenewDeadline (%s) must be longer than RetryPeriod (%s), so a holder gets more than one try to renew", s.RenewDeadline, s.RetryPeriod))
	}
	if s.Duration <= s.RenewDeadline {
		problems = append(problems, fmt.Errorf("lease: Duration (%s) must be longer than RenewDeadline (%s), so a holder stops before others may take over", s.Duration, s.RenewDeadline))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	if s.Identity == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		s.Identity = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Observer == nil {
		s.Observer = nopObserver{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return &Locker{store: store, s: s, observed: map[string]observation{}, active: map[string]bool{}}, nil
}

// Identity is the holder name this Locker writes.
func (l *Locker) Identity() string { return l.s.Identity }

// Settings returns the settings in force, defaults filled in.
func (l *Locker) Settings() Settings { return l.s }

// List returns every lease record.
func (l *Locker) List(ctx context.Context) ([]Record, error) { return l.store.List(ctx) }

// TryAcquire takes the lease if it is free, released or expired, and
// returns ErrHeld if someone else holds it.
func (l *Locker) TryAcquire(ctx context.Context, name string) (*Lease, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.active[name] {
		l.mu.Unlock()
		return nil, ErrHeld
	}
	l.mu.Unlock()

	sent := l.s.Clock.Now()
	rec, err := l.store.Get(ctx, name)
	if errors.Is(err, ErrNotFound) {
		rec, err = l.store.Create(ctx, Record{Name: name, Holder: l.s.Identity, Generation: 1, Duration: l.s.Duration, AcquiredAt: sent, RenewedAt: sent})
		if errors.Is(err, ErrConflict) {
			return nil, ErrHeld
		}
		if err != nil {
			return nil, fmt.Errorf("lease: create %s: %w", name, err)
		}
		return l.start(rec, sent), nil
	}
	var bad *UnreadableError
	if errors.As(err, &bad) {
		// Nobody can read it, so nobody can hold it by renewing it: it is
		// taken over once it has stayed as it is for a lease's duration
		// (a writer that still uses it would have changed it), at a
		// generation above any a counter could have reached, so the
		// fences of the writes made under it hold.
		rec, err = Record{Name: name, Holder: "unreadable", Duration: l.s.Duration, Version: bad.Version,
			Generation: l.s.Clock.Now().UnixMilli()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lease: read %s: %w", name, err)
	}
	now := l.s.Clock.Now()
	if rec.Holder != "" && rec.Holder != l.s.Identity && !l.expired(rec, now) {
		return nil, ErrHeld
	}
	// Free, released, expired, or ours from a renewal whose answer was lost.
	next := rec
	next.Holder, next.Generation, next.Duration = l.s.Identity, rec.Generation+1, l.s.Duration
	sent = l.s.Clock.Now()
	next.AcquiredAt, next.RenewedAt = sent, sent
	rec, err = l.store.Update(ctx, next)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		return nil, ErrHeld // someone else moved first
	}
	if err != nil {
		return nil, fmt.Errorf("lease: take %s: %w", name, err)
	}
	return l.start(rec, sent), nil
}

// expired reports whether rec has stayed unchanged for its Duration since
// this Locker first saw its current version.
func (l *Locker) expired(rec Record, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	obs, ok := l.observed[rec.Name]
	if !ok || obs.version != rec.Version {
		l.observed[rec.Name] = observation{version: rec.Version, at: now}
		return false
	}
	return now.Sub(obs.at) >= rec.Duration
}

// Acquire waits until it holds the lease or ctx ends.
func (l *Locker) Acquire(ctx context.Context, name string) (*Lease, error) {
	for {
		lease, err := l.TryAcquire(ctx, name)
		if err == nil {
			return lease, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ErrHeld) {
			l.s.Logger.Warn("lease: acquire failed; retrying", "lease", name, "error", err)
		}
		wait := time.Duration(float64(l.s.RetryPeriod) * (1 + 0.2*mrand()))
		if err := l.s.Clock.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

var mrand = mathrand.Float64

// AcquireWithin tries for the lease until it holds it, the holder's lease
// lapses, or within has passed (ErrHeld then): every retry period for
// twice the lease's Duration, so a frozen holder's lease is taken about a
// Duration after it froze, then once a Duration, so a holder whose work
// merely takes long costs a read a second. Any error but ErrHeld ends it.
// It runs on the Locker's clock.
func (l *Locker) AcquireWithin(ctx context.Context, name string, within time.Duration) (*Lease, error) {
	started := l.s.Clock.Now()
	for {
		lease, err := l.TryAcquire(ctx, name)
		if err == nil || !errors.Is(err, ErrHeld) {
			return lease, err
		}
		waited := l.s.Clock.Now().Sub(started)
		if waited >= within {
			return nil, err
		}
		wait := l.s.RetryPeriod
		if waited > 2*l.s.Duration {
			wait = l.s.Duration
		}
		if err := l.s.Clock.Sleep(ctx, min(wait, within-waited)); err != nil {
			return nil, err
		}
	}
}

// Run calls fn whenever this Locker holds the lease, with a context that
// ends when the lease is lost, and contends again after a loss. It returns
// when ctx ends (nil) or when fn returns on its own while still leading
// (fn's error).
func (l *Locker) Run(ctx context.Context, name string, fn func(ctx context.Context, f Fence) error) error {
	for {
		lease, err := l.Acquire(ctx, name)
		if err != nil {
			return nil // ctx ended
		}
		// fn stops when the lease is lost or when the caller's ctx ends,
		// and carries the caller's values: who acts (auth.System).
		work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
		stopLost := context.AfterFunc(lease.Context(), func() { cancelWork(context.Cause(lease.Context())) })
		stop := context.AfterFunc(ctx, func() { cancelWork(context.Cause(ctx)) })
		workErr := fn(work, lease.Fence())
		stop()
		stopLost()
		cancelWork(nil)
		lost := errors.Is(context.Cause(lease.Context()), ErrLost)
		releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := lease.Release(releaseCtx); err != nil {
			l.s.Logger.Warn("lease: release failed; it will expire", "lease", name, "error", err)
		}
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(workErr, ErrStepDown):
			// Leave the lease to another instance for a while: this one
			// has just shown it cannot do the work.
			l.s.Logger.Warn("lease: stepped down; contending again later", "lease", name, "error", workErr)
			if err := l.s.Clock.Sleep(ctx, l.s.Duration); err != nil {
				return nil
			}
			continue
		case !lost:
			return workErr
		}
		l.s.Logger.Warn("lease: lost; contending again", "lease", name)
	}
}

func (l *Locker) start(rec Record, sent time.Time) *Lease {
	l.mu.Lock()
	l.active[rec.Name] = true
	delete(l.observed, rec.Name)
	l.mu.Unlock()
	work, cancelWork := context.WithCancelCause(context.Background())
	loop, stopLoop := context.WithCancel(context.Background())
	le := &Lease{locker: l, name: rec.Name, rec: rec, lastRenew: sent, work: work, cancelWork: cancelWork, stopLoop: stopLoop, done: make(chan struct{})}
	l.s.Observer.Acquired(rec.Name)
	l.s.Logger.Info("lease acquired", "lease", rec.Name, "generation", rec.Generation)
	go le.renew(loop)
	return le
}

// Lease is a held lease.
type Lease struct {
	locker     *Locker
	name       string
	work       context.Context
	cancelWork context.CancelCauseFunc
	stopLoop   context.CancelFunc
	done       chan struct{} // closed when the renew loop has exited

	mu        sync.Mutex
	rec       Record
	lastRenew time.Time // when the last successful write was sent
	lost      bool
}

// Context ends when the lease is lost or released; its cause says which.
func (le *Lease) Context() context.Context { return le.work }

// Fence is the proof of leadership that work carries into its writes.
func (le *Lease) Fence() Fence {
	le.mu.Lock()
	defer le.mu.Unlock()
	return Fence{Lease: le.rec.Name, Generation: le.rec.Generation}
}

// Renewing reports whether the lease is still being renewed: false once it
// is lost or released.
func (le *Lease) Renewing() bool {
	select {
	case <-le.done:
		return false
	default:
		return true
	}
}

// Name is the lease's name.
func (le *Lease) Name() string { return le.name }

func (le *Lease) renew(loop context.Context) {
	defer close(le.done)
	l := le.locker
	for {
		le.mu.Lock()
		deadline := le.lastRenew.Add(l.s.RenewDeadline)
		le.mu.Unlock()
		wait := min(l.s.RetryPeriod, deadline.Sub(l.s.Clock.Now()))
		if err := l.s.Clock.Sleep(loop, wait); err != nil {
			return // released
		}
		sent := l.s.Clock.Now()
		if !sent.Before(deadline) {
			le.lose("renew deadline passed")
			return
		}
		le.mu.Lock()
		next := le.rec
		le.mu.Unlock()
		next.RenewedAt = sent
		// Bound the call by the time left before the deadline, so a hung
		// request cannot keep the holder acting past it.
		callCtx, cancel := context.WithTimeout(loop, deadline.Sub(sent))
		rec, err := l.store.Update(callCtx, next)
		cancel()
		l.s.Observer.Renewed(next.Name, l.s.Clock.Now().Sub(sent), err)
		switch {
		case err == nil:
			le.mu.Lock()
			le.rec, le.lastRenew = rec, sent
			le.mu.Unlock()
		case loop.Err() != nil:
			return
		case errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound):
			le.lose("another holder took over")
			return
		default:
			l.s.Logger.Warn("lease: renew failed", "lease", next.Name, "error", err)
		}
	}
}

func (le *Lease) lose(why string) {
	le.mu.Lock()
	le.lost = true
	le.mu.Unlock()
	le.cancelWork(fmt.Errorf("%w (%s)", ErrLost, why))
	le.locker.forget(le.name)
	le.locker.s.Observer.Lost(le.name)
	le.locker.s.Logger.Warn("lease lost", "lease", le.name, "reason", why)
}

func (l *Locker) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.active, name)
}

// Release stops renewing, cancels the work context and, unless the lease
// was already lost, marks the record free so a contender takes it at once.
func (le *Lease) Release(ctx context.Context) error {
	le.stopLoop()
	<-le.done
	le.cancelWork(ErrReleased)
	le.mu.Lock()
	lost, rec := le.lost, le.rec
	le.lost = true
	le.mu.Unlock()
	if lost {
		return nil
	}
	defer le.locker.forget(rec.Name)
	rec.Holder = ""
	rec.RenewedAt = le.locker.s.Clock.Now()
	if _, err := le.locker.store.Update(ctx, rec); err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("lease: release %s: %w", rec.Name, err)
	}
	return nil
}

// Fence identifies the generation of a lease that work runs under.
type Fence struct {
	Lease      string
	Generation int64
}

// Admits decides whether a write under f may replace a record last written
// under (lease, generation). Writes under another lease, or none, are
// admitted: generations of different leases are not comparable.
func (f Fence) Admits(lease string, generation int64) error {
	if lease == f.Lease && generation > f.Generation {
		return fmt.Errorf("%w: %s generation %d, but the record was written under generation %d", ErrFenced, f.Lease, f.Generation, generation)
	}
	return nil
}

// ValidName checks a lease name: 1 to 200 printable characters.
func ValidName(name string) error {
	if name == "" || len(name) > 200 {
		return fmt.Errorf("lease: name must be 1 to 200 characters, got %d", len(name))
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("lease: name %q holds a control character", name)
		}
	}
	return nil
}

type nopObserver struct{}

func (nopObserver) Acquired(string)                      {}
func (nopObserver) Lost(string)                          {}
func (nopObserver) Renewed(string, time.Duration, error) {}

// Claim timings: a claim is a lease taken for one piece of work and
// released after it (one app's switch call). A claim whose holder froze
// lapses after ClaimDuration, so the work moves on within about a second
// instead of a loop lease's 15 s.
const (
	ClaimDuration      = time.Second
	ClaimRenewDeadline = 600 * time.Millisecond
	ClaimRetryPeriod   = 150 * time.Millisecond
)

// NewClaims returns a Locker for claims, on the real clock: its timings
// are a watchdog, not part of the domain's time.
func NewClaims(store Store, identity string, obs Observer, log *slog.Logger) (*Locker, error) {
	return New(store, Settings{Identity: identity, Duration: ClaimDuration, RenewDeadline: ClaimRenewDeadline,
		RetryPeriod: ClaimRetryPeriod, Observer: obs, Logger: log})
}
