package storage_test

import (
	"errors"
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
	cs, _ := newCircuits(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	seed := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed, ChangedAt: t0}
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
	cs, _ := newCircuits(t)
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed, ChangedAt: time.Now()}
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
		if err := cs.Create(t.Context(), circuit.Circuit{AppID: "orders", Function: function, Settings: circuit.Settings{Threshold: 5, Window: time.Minute}, State: circuit.Closed}); err != nil {
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

// TestTwoInstancesCannotTripPastTheGuardrail forces the interleaving every
// instance's tick makes possible: an app allows one circuit off; instance
// 1 reads the app (nothing off) and is held between its read and its
// write while instance 2 reads the same, trips B and writes. Instance 1's
// trip of A, decided on the old reading, then fails as a conflict, and
// its next decision is held: one circuit off, never two.
func TestTwoInstancesCannotTripPastTheGuardrail(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableCircuits); err != nil {
		t.Fatal(err)
	}
	one, two := storage.New(svc).Circuits, storage.New(svc).Circuits // two instances' stores
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, fn := range []string{"A", "B", "C"} {
		if err := one.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: fn, Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, State: circuit.Closed, ChangedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	guardrail := circuit.Guardrail{MaxOff: 1}
	trip := func(cs *storage.Circuits, fn string, between func()) error {
		c, err := cs.Get(t.Context(), "orders", fn)
		if err != nil {
			t.Fatal(err)
		}
		next, fl, err := circuit.Trip(c, circuit.EvaluatorActor, "12 failures in 1m", circuit.Counts{Counted: 12}, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return cs.TransitionGuarded(t.Context(), lease.Fence{}, next, fl, func(app []circuit.Circuit, unreadable int) error {
			err := guardrail.Admits(app, unreadable, c)
			between()
			return err
		})
	}
	read, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- trip(one, "A", func() { close(read); <-release })
	}()
	<-read // instance 1 has read the app: nothing off
	if err := trip(two, "B", func() {}); err != nil {
		t.Fatalf("instance 2's trip of B: %v", err)
	}
	close(release)
	if err := <-done; !errors.Is(err, circuit.ErrConflict) {
		t.Fatalf("instance 1's trip of A, decided before B tripped, answered %v; want a conflict", err)
	}
	var held *circuit.GuardrailHeld
	if err := trip(one, "A", func() {}); !errors.As(err, &held) || held.Off != 1 || held.Limit != 1 {
		t.Fatalf("instance 1's next decision on A answered %v; want held, 1 of at most 1 off", err)
	}
	off := 0
	for _, fn := range []string{"A", "B", "C"} {
		if c, _ := one.Get(t.Context(), "orders", fn); c.State.TriggerOff() {
			off++
		}
	}
	if off != 1 {
		t.Errorf("%d circuits off, the guardrail allows 1", off)
	}
}

// An unreadable circuit row of the app counts as off: the guardrail is
// never exceeded because a row does not decode.
func TestAnUnreadableCircuitCountsAgainstTheGuardrail(t *testing.T) {
	cs, svc := newCircuits(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if err := cs.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "A", Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, State: circuit.Closed, ChangedAt: t0}); err != nil {
		t.Fatal(err)
	}
	type badCircuit struct {
		tablestore.Meta
		Threshold string
	}
	bad := &badCircuit{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "c|B"}, Threshold: "many"}
	if err := svc.Table(storage.TableCircuits).Insert(t.Context(), bad); err != nil {
		t.Fatal(err)
	}
	c, _ := cs.Get(t.Context(), "orders", "A")
	next, fl, _ := circuit.Trip(c, circuit.EvaluatorActor, "12 failures in 1m", circuit.Counts{Counted: 12}, t0.Add(time.Minute))
	var held *circuit.GuardrailHeld
	err := cs.TransitionGuarded(t.Context(), lease.Fence{}, next, fl, func(app []circuit.Circuit, unreadable int) error {
		return circuit.Guardrail{MaxOff: 1}.Admits(app, unreadable, c)
	})
	if !errors.As(err, &held) || held.Off != 1 {
		t.Errorf("a trip beside an unreadable circuit row answered %v; want held, the row counted as off", err)
	}
}

// What a throttle recorded is someone else's row to a later reader: a
// setting that is not a throttle's, too many of them or a value too long
// makes the row unreadable (shown as such), never a setting Fusebox writes.
func TestLoweredRowsAreBoundedWhenRead(t *testing.T) {
	cs, svc := newCircuits(t)
	type row struct {
		tablestore.Meta
		Threshold     int32
		WindowSeconds int32
		State         string
		Lowered       string
	}
	long := strings.Repeat("9", 2000)
	cases := map[string]string{
		"A": `{"AzureFunctionsJobHost__extensions__eventHubs__prefetchCount": "300"}`,
		"B": `{"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=evil"}`,
		"C": `{"AzureFunctionsJobHost__extensions__eventHubs__prefetchCount": "` + long + `"}`,
		"D": `["not", "an", "object"]`,
	}
	for fn, lowered := range cases {
		if err := svc.Table(storage.TableCircuits).Insert(t.Context(), &row{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "c|" + fn}, Threshold: 10, WindowSeconds: 60, State: "throttled", Lowered: lowered}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cs.Get(t.Context(), "orders", "A")
	if err != nil || c.State != circuit.Throttled || *c.Lowered["AzureFunctionsJobHost__extensions__eventHubs__prefetchCount"] != "300" {
		t.Fatalf("a good row: %+v, %v", c.Lowered, err)
	}
	for _, fn := range []string{"B", "C", "D"} {
		if _, err := cs.Get(t.Context(), "orders", fn); err == nil || !strings.Contains(err.Error(), "Lowered") {
			t.Errorf("%s (%s): read as %v; want refused, naming Lowered", fn, cases[fn][:min(60, len(cases[fn]))], err)
		}
	}
}

// A Settings column is someone else's JSON to a later reader: too long,
// not settings, or settings that would break counting, the row is
// unreadable and says why; what costs only a feature is left out.
func TestASettingsColumnIsCheckedWhenRead(t *testing.T) {
	cs, svc := newCircuits(t)
	type row struct {
		tablestore.Meta
		Settings string
		State    string
	}
	cases := map[string]struct{ settings, want string }{
		"Long":     {`{"threshold": 5, "window_seconds": 60, "runbook_note": "` + strings.Repeat("é", 20<<10) + `"}`, "more than"},
		"NotJSON":  {`threshold=5`, "not a circuit's settings"},
		"Zero":     {`{"threshold": 0, "window_seconds": 60}`, "must both be positive"},
		"Overflow": {`{"threshold": 5, "window_seconds": 9300000000000}`, "not a circuit's settings"},
		"Runbook":  {`{"threshold": 5, "window_seconds": 60, "runbook_url": "javascript:alert(1)"}`, "runbook"},
		"None":     {``, "no settings"},
		"Good":     {`{"threshold": 5, "window_seconds": 60, "min_instances": -4, "throttle_threshold": 5000000, "unknown_to_this_release": true}`, ""},
	}
	for fn, c := range cases {
		if err := svc.Table(storage.TableCircuits).Insert(t.Context(), &row{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "c|" + fn}, Settings: c.settings, State: "closed"}); err != nil {
			t.Fatal(err)
		}
	}
	for fn, c := range cases {
		got, err := cs.Get(t.Context(), "orders", fn)
		switch {
		case c.want == "" && (err != nil || got.Threshold != 5 || got.Rule.MinInstances != 0 || got.Throttle.Threshold != 0):
			t.Errorf("%s: read as %+v, %v; want threshold 5, no quorum and no throttle", fn, got.Settings, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: read as %v; want refused, saying %q", fn, err, c.want)
		}
	}
}
