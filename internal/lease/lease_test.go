package lease_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// cuttable is an HTTP transport to Azurite whose link can be cut, the way
// a network partition cuts an instance off from storage.
type cuttable struct{ cut atomic.Bool }

func (c *cuttable) Do(req *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("dial tcp: connection refused (cut by the test)")
	}
	return http.DefaultClient.Do(req)
}

var _ policy.Transporter = (*cuttable)(nil)

// instance is one Fusebox instance: its own connection to storage and its
// own Locker, sharing the test's fake clock.
type instance struct {
	name   string
	link   *cuttable
	store  *storage.Store
	locker *lease.Locker
}

type world struct {
	t      *testing.T
	clock  *clock.Fake
	prefix string
	ctx    context.Context
}

var settings = lease.Settings{Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

func newWorld(t *testing.T) *world {
	t.Helper()
	svc, prefix := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableLeases); err != nil {
		t.Fatal(err)
	}
	if err := svc.CreateTable(t.Context(), storage.TableCircuits); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return &world{t: t, clock: clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)), prefix: prefix, ctx: ctx}
}

func (w *world) instance(name string) *instance {
	w.t.Helper()
	link := &cuttable{}
	svc, err := tablestore.NewFromConnectionString(testenv.ConnectionString(w.t), tablestore.Options{Prefix: w.prefix, Transport: link, MaxRetries: -1})
	if err != nil {
		w.t.Fatal(err)
	}
	s := settings
	s.Identity, s.Clock = name, w.clock
	l, err := lease.New(storage.New(svc).Leases, s)
	if err != nil {
		w.t.Fatal(err)
	}
	return &instance{name: name, link: link, store: storage.New(svc), locker: l}
}

// settle waits until every lease still being renewed is asleep on the
// clock: the moment nothing happens until time moves.
func (w *world) settle(leases ...*lease.Lease) {
	w.t.Helper()
	for {
		live := 0
		for _, le := range leases {
			if le != nil && le.Renewing() {
				live++
			}
		}
		if w.clock.Waiters() >= live {
			return
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("leases did not settle: %d renewing, %d asleep", live, w.clock.Waiters())
		case <-time.After(time.Millisecond): // poll; the bound is the test context
		}
	}
}

// step moves the clock and waits for the leases to settle.
func (w *world) step(d time.Duration, leases ...*lease.Lease) {
	w.t.Helper()
	w.settle(leases...)
	w.clock.Advance(d)
	w.settle(leases...)
}

func TestReleaseHandsOverAtOnce(t *testing.T) {
	w := newWorld(t)
	a, b := w.instance("a"), w.instance("b")
	la, err := a.locker.TryAcquire(w.ctx, "evaluator")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.locker.TryAcquire(w.ctx, "evaluator"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("b while a holds: got %v, want ErrHeld", err)
	}
	if err := la.Release(w.ctx); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(la.Context()); !errors.Is(cause, lease.ErrReleased) {
		t.Errorf("a's work context: cause %v, want ErrReleased", cause)
	}
	lb, err := b.locker.TryAcquire(w.ctx, "evaluator") // no time has passed
	if err != nil {
		t.Fatalf("b right after release: %v", err)
	}
	if got := lb.Fence(); got != (lease.Fence{Lease: "evaluator", Generation: 2}) {
		t.Errorf("b's fence = %+v, want generation 2", got)
	}
	w.settle(lb)
	if err := lb.Release(w.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCutOffHolderStopsBeforeAnyoneMayTakeOver(t *testing.T) {
	w := newWorld(t)
	a, b := w.instance("a"), w.instance("b")
	start := w.clock.Now()
	la, err := a.locker.TryAcquire(w.ctx, "evaluator")
	if err != nil {
		t.Fatal(err)
	}
	a.link.cut.Store(true)

	var stoppedAt, takenAt time.Duration
	var lb *lease.Lease
	for elapsed := time.Duration(0); elapsed <= 20*time.Second; elapsed += time.Second {
		if stoppedAt == 0 && la.Context().Err() != nil {
			stoppedAt = elapsed
			if !errors.Is(context.Cause(la.Context()), lease.ErrLost) {
				t.Errorf("a stopped with cause %v, want ErrLost", context.Cause(la.Context()))
			}
		}
		if lb == nil {
			lb, err = b.locker.TryAcquire(w.ctx, "evaluator")
			switch {
			case err == nil:
				takenAt = elapsed
			case !errors.Is(err, lease.ErrHeld):
				t.Fatal(err)
			}
		}
		w.step(time.Second, la, lb)
	}
	if stoppedAt != settings.RenewDeadline {
		t.Errorf("a stopped acting %s after its last renewal, want exactly the renew deadline, %s", stoppedAt, settings.RenewDeadline)
	}
	if takenAt != settings.Duration {
		t.Errorf("b took over after %s, want exactly the lease duration, %s (b first saw the record at %s)", takenAt, settings.Duration, start.Format(time.TimeOnly))
	}
	if !(stoppedAt < takenAt) {
		t.Errorf("a acted until %s but b took over at %s", stoppedAt, takenAt)
	}
	if lb != nil {
		if got := lb.Fence().Generation; got != 2 {
			t.Errorf("generation after takeover = %d, want 2", got)
		}
		lb.Release(w.ctx)
	}
}

func TestHealthyHolderKeepsTheLease(t *testing.T) {
	w := newWorld(t)
	a, b := w.instance("a"), w.instance("b")
	la, err := a.locker.TryAcquire(w.ctx, "evaluator")
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		if _, err := b.locker.TryAcquire(w.ctx, "evaluator"); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("at %s b got %v, want ErrHeld", w.clock.Now().Format(time.TimeOnly), err)
		}
		w.step(time.Second, la)
	}
	if la.Context().Err() != nil {
		t.Errorf("a lost a lease it renewed all along: %v", context.Cause(la.Context()))
	}
	la.Release(w.ctx)
}

func TestStaleHoldersFencedWriteIsRejected(t *testing.T) {
	w := newWorld(t)
	a, b := w.instance("a"), w.instance("b")
	ci := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}
	if err := a.store.Circuits.Put(w.ctx, ci); err != nil {
		t.Fatal(err)
	}
	la, err := a.locker.TryAcquire(w.ctx, "evaluator")
	if err != nil {
		t.Fatal(err)
	}
	fenceA := la.Fence()
	ci.State, ci.Episode, ci.Reason = circuit.Open, 1, "tripped by a"
	if err := a.store.Circuits.SetState(w.ctx, fenceA, ci); err != nil {
		t.Fatalf("a's write while leading: %v", err)
	}

	// a is cut off (think: a long pause); b takes over and writes.
	a.link.cut.Store(true)
	var lb *lease.Lease
	for lb == nil {
		lb, err = b.locker.TryAcquire(w.ctx, "evaluator")
		if err != nil && !errors.Is(err, lease.ErrHeld) {
			t.Fatal(err)
		}
		w.step(time.Second, la, lb)
	}
	ci.State, ci.Episode, ci.Reason = circuit.Closed, 2, "resumed under b"
	if err := b.store.Circuits.SetState(w.ctx, lb.Fence(), ci); err != nil {
		t.Fatalf("b's write: %v", err)
	}

	// a comes back and writes with its old fence.
	a.link.cut.Store(false)
	ci.State, ci.Episode, ci.Reason = circuit.Open, 3, "late write from a"
	if err := a.store.Circuits.SetState(w.ctx, fenceA, ci); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a's late write: got %v, want ErrFenced", err)
	}
	got, err := b.store.Circuits.Get(w.ctx, "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	if got.Reason != "resumed under b" || got.State != circuit.Closed {
		t.Errorf("circuit after the late write: %s, %q; want b's write to stand", got.State, got.Reason)
	}
	lb.Release(w.ctx)
}

// TestThreeContendersNeverOverlap runs three instances through a seeded
// random schedule of partitions, heals and releases, one second at a time,
// and checks at every instant that at most one of them may act.
func TestThreeContendersNeverOverlap(t *testing.T) {
	w := newWorld(t)
	insts := []*instance{w.instance("a"), w.instance("b"), w.instance("c")}
	held := make([]*lease.Lease, len(insts))
	rng := rand.New(rand.NewPCG(2026, 11))

	type tenure struct {
		holder     string
		generation int64
		from, to   int // seconds; to is the first second it may no longer act
	}
	var tenures []tenure
	open := map[int]int{} // instance -> index in tenures

	acting := func() []int {
		var out []int
		for i, le := range held {
			if le != nil && le.Context().Err() == nil {
				out = append(out, i)
			}
		}
		return out
	}
	for sec := range 400 {
		// Close tenures of holders that stopped acting.
		for i, le := range held {
			if le != nil && le.Context().Err() != nil {
				tenures[open[i]].to = sec
				delete(open, i)
				held[i] = nil
			}
		}
		if now := acting(); len(now) > 1 {
			t.Fatalf("second %d: instances %v may all act", sec, now)
		}
		// Chaos: cut or heal a link, or release a lease.
		switch r := rng.IntN(20); {
		case r < 2:
			insts[rng.IntN(3)].link.cut.Store(true)
		case r < 6:
			insts[rng.IntN(3)].link.cut.Store(false)
		case r < 7:
			if i := rng.IntN(3); held[i] != nil {
				held[i].Release(w.ctx)
				tenures[open[i]].to = sec
				delete(open, i)
				held[i] = nil
			}
		}
		for i, in := range insts {
			if held[i] != nil {
				continue
			}
			le, err := in.locker.TryAcquire(w.ctx, "evaluator")
			if err != nil {
				continue // held elsewhere, or cut off
			}
			if now := acting(); len(now) > 0 {
				t.Fatalf("second %d: %s acquired while %v may act", sec, in.name, now)
			}
			held[i] = le
			open[i] = len(tenures)
			tenures = append(tenures, tenure{holder: in.name, generation: le.Fence().Generation, from: sec, to: -1})
		}
		w.step(time.Second, held...)
	}
	for _, le := range held {
		if le != nil {
			le.Release(w.ctx)
		}
	}

	if len(tenures) < 5 {
		t.Fatalf("only %d tenures in 400 s: the schedule did not exercise takeovers", len(tenures))
	}
	for i := 1; i < len(tenures); i++ {
		prev, cur := tenures[i-1], tenures[i]
		if prev.to < 0 || prev.to > cur.from {
			t.Errorf("tenure %+v overlaps %+v", prev, cur)
		}
		if cur.generation <= prev.generation {
			t.Errorf("generation went from %d to %d", prev.generation, cur.generation)
		}
	}
	t.Logf("%d tenures: %v", len(tenures), tenures)
}

func TestNamesWithSlashesAndListing(t *testing.T) {
	w := newWorld(t)
	a := w.instance("a")
	names := []string{"evaluator", "jobs/backfill/nightly", "orders/100", "50% off?#x"}
	var leases []*lease.Lease
	for _, n := range names {
		le, err := a.locker.TryAcquire(w.ctx, n)
		if err != nil {
			t.Fatalf("%q: %v", n, err)
		}
		leases = append(leases, le)
	}
	recs, err := a.locker.List(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Name)
		if r.Holder != "a" || r.Generation != 1 || r.Duration != settings.Duration {
			t.Errorf("record %+v", r)
		}
	}
	slices.Sort(got)
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	for _, le := range leases {
		le.Release(w.ctx)
	}
	if _, err := a.locker.TryAcquire(w.ctx, ""); err == nil {
		t.Error("an empty name was accepted")
	}
}

func TestSettingsAreValidated(t *testing.T) {
	tests := []struct {
		s    lease.Settings
		want string
	}{
		{lease.Settings{Duration: 10 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: time.Second}, "Duration (10s) must be longer than RenewDeadline (10s)"},
		{lease.Settings{Duration: 15 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second}, "RenewDeadline (2s) must be longer than RetryPeriod (2s)"},
		{lease.Settings{RetryPeriod: -time.Second}, "RetryPeriod must be positive"},
	}
	for _, tt := range tests {
		_, err := lease.New(nil, tt.s)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want %q", tt.s, err, tt.want)
		}
	}
	if l, err := lease.New(nil, lease.Settings{}); err != nil {
		t.Errorf("defaults rejected: %v", err)
	} else if s := l.Settings(); s.Duration != 15*time.Second || s.RenewDeadline != 10*time.Second || s.RetryPeriod != 2*time.Second || s.Identity == "" {
		t.Errorf("defaults = %+v", s)
	}
}

// actsFor is a value the caller's context carries into the work, as
// Fusebox's loops carry who acts (auth.System).
type actsFor struct{}

func TestRunWorksWhileLeadingAndReleasesWhenStopped(t *testing.T) {
	w := newWorld(t)
	a := w.instance("a")
	ctx, cancel := context.WithCancel(context.WithValue(w.ctx, actsFor{}, "fusebox"))
	started := make(chan lease.Fence, 1)
	done := make(chan error, 1)
	go func() {
		done <- a.locker.Run(ctx, "sessions/sweeper", func(work context.Context, f lease.Fence) error {
			if work.Value(actsFor{}) != "fusebox" {
				t.Error("the work under the lease does not carry the caller's values: it acts for nobody")
			}
			started <- f
			<-work.Done()
			return nil
		})
	}()
	var f lease.Fence
	select {
	case f = <-started:
	case <-w.ctx.Done():
		t.Fatal("Run never started the work")
	}
	if f != (lease.Fence{Lease: "sessions/sweeper", Generation: 1}) {
		t.Errorf("fence = %+v", f)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v after its context ended, want nil", err)
	}
	rec, err := a.store.Leases.Get(w.ctx, "sessions/sweeper")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Holder != "" {
		t.Errorf("after Run stopped the lease is held by %q, want released", rec.Holder)
	}
}

// TestAnUnreadableClaimIsTakenOverAfterItsDuration: an app's switch claim
// row that does not decode (its generation a word) once stopped switching
// for the app until someone rewrote it. Now it is held for one lease
// duration, in case something still writes it, then taken over at a
// generation above any counter's, and the claim works again.
func TestAnUnreadableClaimIsTakenOverAfterItsDuration(t *testing.T) {
	w := newWorld(t)
	a := w.instance("a")
	type garbled struct {
		tablestore.Meta
		Name, Generation string
	}
	row := &garbled{Meta: tablestore.Meta{PartitionKey: "lease", RowKey: "switch%2Forders"}, Name: "switch/orders", Generation: "seven"}
	if err := a.store.Service.Table(storage.TableLeases).Insert(w.ctx, row); err != nil {
		t.Fatal(err)
	}
	if _, err := a.locker.TryAcquire(w.ctx, "switch/orders"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("first sight of the unreadable claim: %v, want ErrHeld until it has stayed so for its duration", err)
	}
	w.clock.Advance(settings.Duration)
	l, err := a.locker.TryAcquire(w.ctx, "switch/orders")
	if err != nil {
		t.Fatalf("after %s unchanged, the unreadable claim was not taken over: %v", settings.Duration, err)
	}
	if g := l.Fence().Generation; g <= 1_000_000_000_000 {
		t.Errorf("taken over at generation %d; want one above any counter's (Unix milliseconds)", g)
	}
	w.settle(l)
	if err := l.Release(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.locker.TryAcquire(w.ctx, "switch/orders"); err != nil {
		t.Errorf("the claim, once rewritten, does not take: %v", err)
	}
}

// asleep waits until n goroutines sleep on the world's clock.
func (w *world) asleep(n int) {
	w.t.Helper()
	if err := w.clock.BlockUntil(w.ctx, n); err != nil {
		w.t.Fatalf("%d asleep on the clock, want %d: %v", w.clock.Waiters(), n, err)
	}
}

// result is what got delivers, within the test's time.
func (w *world) result(got <-chan error) error {
	w.t.Helper()
	select {
	case err := <-got:
		return err
	case <-w.ctx.Done():
		w.t.Fatal("no answer")
		return nil
	}
}

func TestAcquireWithinTriesOnTheClockUntilItsTimeIsUp(t *testing.T) {
	w := newWorld(t)
	a, b := w.instance("a"), w.instance("b")
	la, err := a.locker.TryAcquire(w.ctx, "switch/orders")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.locker.AcquireWithin(w.ctx, "switch/orders", 5*time.Second)
		got <- err
	}()
	w.asleep(2) // a renewing, b between tries
	for waited := 2; waited <= 4; waited += 2 {
		w.clock.Advance(2 * time.Second)
		w.asleep(2)
		select {
		case err := <-got:
			t.Fatalf("gave up after %ds of 5s: %v", waited, err)
		default:
		}
	}
	w.clock.Advance(2 * time.Second) // 6s: past its time
	if err := w.result(got); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("after 6s of 5s: %v, want ErrHeld", err)
	}

	// A holder that lets go is followed at the next try, not at the end.
	go func() {
		le, err := b.locker.AcquireWithin(w.ctx, "switch/orders", time.Minute)
		if err == nil {
			err = le.Release(w.ctx)
		}
		got <- err
	}()
	w.asleep(2)
	if err := la.Release(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.asleep(1)
	w.clock.Advance(settings.RetryPeriod)
	if err := w.result(got); err != nil {
		t.Fatalf("after the holder let go: %v", err)
	}
}
