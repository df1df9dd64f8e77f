package storage_test

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Reseeding a circuit back to an earlier episode (make run on old data)
// clears its flip log, so its next transition does not collide with a flip
// of the same episode number from before.
func TestPutBackToAnEarlierEpisodeLetsItTransitionAgain(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableCircuits); err != nil {
		t.Fatal(err)
	}
	cs := storage.New(svc).Circuits
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	seed := circuit.Circuit{AppID: "orders", Function: "Process", Threshold: 100, Window: 30 * time.Second, State: circuit.Closed, ChangedAt: t0}
	trip := func() error {
		c, err := cs.Get(t.Context(), "orders", "Process")
		if err != nil {
			t.Fatal(err)
		}
		next, fl, err := circuit.Trip(c, "ops", "by hand", circuit.Counts{}, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return cs.Transition(t.Context(), lease.Fence{}, next, fl)
	}
	if err := cs.Put(t.Context(), seed); err != nil {
		t.Fatal(err)
	}
	if err := trip(); err != nil {
		t.Fatal(err)
	}
	before, _ := cs.Get(t.Context(), "orders", "Process")
	if err := cs.Put(t.Context(), seed); err != nil { // reseeded: episode 0 again
		t.Fatal(err)
	}
	if err := cs.Put(t.Context(), seed); err != nil { // and again, at the episode it now has
		t.Fatal(err)
	}
	if err := trip(); err != nil {
		t.Fatalf("the trip after a reseed failed: %v", err)
	}
	after, _ := cs.Get(t.Context(), "orders", "Process")
	if after.Episode != 1 || after.Incarnation == before.Incarnation {
		t.Errorf("after the reseed: episode %d, incarnation %q (was %q); want 1 and a new incarnation", after.Episode, after.Incarnation, before.Incarnation)
	}
}

func TestConcurrencySamplesAreKeptPerFunction(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableHostSamples); err != nil {
		t.Fatal(err)
	}
	hs := storage.New(svc).HostSamples
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, n := range []int{4, 8, 16} {
		if err := hs.PutConcurrency(t.Context(), "orders", "Process", t0.Add(time.Duration(i)*5*time.Minute), n); err != nil {
			t.Fatal(err)
		}
	}
	if err := hs.PutConcurrency(t.Context(), "orders", "ProcessOrders", t0, 99); err != nil { // a name that begins the same
		t.Fatal(err)
	}
	got, err := hs.Concurrency(t.Context(), "orders", "Process", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Concurrency != 8 || got[1].Concurrency != 16 {
		t.Errorf("samples since 09:01 = %+v, want 8 then 16, and none of ProcessOrders", got)
	}
}

// Put on an existing circuit reports a refused update; it used to lose the
// error to a shadowed variable and say the settings were saved.
func TestPutReportsARefusedUpdate(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableCircuits); err != nil {
		t.Fatal(err)
	}
	cs := storage.New(svc).Circuits
	c := circuit.Circuit{AppID: "orders", Function: "Process", Threshold: 100, Window: 30 * time.Second, State: circuit.Closed, ChangedAt: time.Now()}
	if err := cs.Put(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	// A string property over Table storage's 64 KiB limit is refused.
	c.Recipients = []string{strings.Repeat("r", 70_000) + "@example.com"}
	if err := cs.Put(t.Context(), c); err == nil {
		t.Fatal("Put of an oversized circuit over an existing one answered nil")
	}
	got, err := cs.Get(t.Context(), "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Recipients) != 0 {
		t.Errorf("the refused settings were stored: %d recipients", len(got.Recipients))
	}
}

// Recent serves the pages from this instance's last list: no storage read
// while it is fresh, a change made through the same Circuits at once, and
// one made by another instance as soon as the list is older than asked.
func TestRecentAnswersFromTheLastListButNeverHidesItsOwnWrites(t *testing.T) {
	shared, prefix := testenv.Storage(t)
	if err := shared.CreateTable(t.Context(), storage.TableCircuits); err != nil {
		t.Fatal(err)
	}
	var queries atomic.Int32
	mine, err := tablestore.NewFromConnectionString(testenv.ConnectionString(t), tablestore.Options{Prefix: prefix, ObserveRows: func(table string, _ int) {
		if strings.HasSuffix(table, storage.TableCircuits) {
			queries.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	here, elsewhere := storage.New(mine).Circuits, storage.New(shared).Circuits
	put := func(cs *storage.Circuits, function string) {
		t.Helper()
		if err := cs.Create(t.Context(), circuit.Circuit{AppID: "orders", Function: function, Threshold: 5, Window: time.Minute, State: circuit.Closed}); err != nil {
			t.Fatal(err)
		}
	}
	recent := func(maxAge time.Duration) []string {
		t.Helper()
		cs, err := here.Recent(t.Context(), maxAge)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Function)
		}
		return names
	}
	put(here, "A")
	if got := strings.Join(recent(time.Hour), ","); got != "A" {
		t.Fatalf("first Recent: %q, want A", got)
	}
	read := queries.Load()
	for range 5 {
		recent(time.Hour)
	}
	if n := queries.Load() - read; n != 0 {
		t.Errorf("five fresh Recents read storage %d times, want none", n)
	}
	put(here, "B")
	if got := strings.Join(recent(time.Hour), ","); got != "A,B" {
		t.Errorf("after a write on this instance: %q, want A,B at once", got)
	}
	put(elsewhere, "C")
	if got := strings.Join(recent(0), ","); got != "A,B,C" {
		t.Errorf("after another instance's write, a list older than asked: %q, want A,B,C", got)
	}
	// On the real clock: a page asking for lists at most 200 ms old sees
	// another instance's change once that much time has passed, and no later
	// than one list after.
	const maxAge = 200 * time.Millisecond
	put(elsewhere, "D")
	wrote := time.Now()
	for !strings.HasSuffix(strings.Join(recent(maxAge), ","), ",D") {
		if time.Since(wrote) > maxAge+2*time.Second {
			t.Fatalf("another instance's circuit not listed %s after it was written, asking for lists at most %s old", time.Since(wrote), maxAge)
		}
		runtime.Gosched() // Recent answers from memory until its list is maxAge old
	}
	t.Logf("another instance's write listed %s after it", time.Since(wrote).Round(time.Millisecond))
}
