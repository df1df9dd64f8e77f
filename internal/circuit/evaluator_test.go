package circuit_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/localswitch"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

type rig struct {
	t        *testing.T
	store    *storage.Store
	clock    *clock.Fake
	settings string // the demo app's local.settings.json
	eval     *circuit.Evaluator
	fence    lease.Fence
}

func newRig(t *testing.T) *rig {
	t.Helper()
	svc, _ := testenv.Storage(t)
	for _, name := range []string{storage.TableApps, storage.TableCircuits, storage.TableFailures, storage.TableStatus} {
		if err := svc.CreateTable(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	st := storage.New(svc)
	r := &rig{t: t, store: st, clock: clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)),
		settings: filepath.Join(t.TempDir(), "local.settings.json"), fence: lease.Fence{Lease: "evaluator", Generation: 1}}
	if err := st.Apps.Put(t.Context(), circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: r.settings}); err != nil {
		t.Fatal(err)
	}
	if err := st.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "Process", Threshold: 100, Window: 30 * time.Second, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	r.eval = r.evaluator()
	return r
}

func (r *rig) evaluator() *circuit.Evaluator {
	return circuit.NewEvaluator(storage.EvaluatorStore{Store: r.store}, switches.Router{Local: switches.Local{}},
		circuit.EvaluatorSettings{Clock: r.clock, DriftEvery: 10 * time.Second})
}

// fail records n failures of Process in the second ago before now, from writer.
func (r *rig) fail(writer string, n int, ago time.Duration) {
	r.t.Helper()
	err := r.store.Failures.Record(r.t.Context(), writer, []storage.Report{{App: "orders", Function: "Process", Second: r.clock.Now().Add(-ago), Count: n}})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) tick() {
	r.t.Helper()
	if err := r.eval.Tick(r.t.Context(), r.fence); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) circuit() circuit.Circuit {
	r.t.Helper()
	c, err := r.store.Circuits.Get(r.t.Context(), "orders", "Process")
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func (r *rig) disabled() bool {
	r.t.Helper()
	off, err := localswitch.Disabled(r.settings, "Process")
	if err != nil {
		r.t.Fatal(err)
	}
	return off
}

func TestEvaluatorTripsPastTheThresholdAndSwitchesTheTriggerOff(t *testing.T) {
	r := newRig(t)
	// 100 failures across two instances within 30 s: at the threshold, not past it.
	r.fail("instance-a", 60, 28*time.Second)
	r.fail("instance-b", 40, 0)
	r.fail("instance-a", 500, 31*time.Second) // outside the window
	r.tick()
	if c := r.circuit(); c.State != circuit.Closed {
		t.Fatalf("tripped at the threshold: %s, %q", c.State, c.Reason)
	}
	if r.disabled() {
		t.Fatal("trigger off while the circuit is closed")
	}

	r.clock.Advance(time.Second)
	r.fail("instance-b", 1, 0) // the 101st within the window ending now
	r.tick()
	c := r.circuit()
	if c.State != circuit.Open || c.Episode != 1 || c.Pending() {
		t.Fatalf("after the 101st failure: %s episode %d pending %v", c.State, c.Episode, c.Pending())
	}
	if !r.disabled() {
		t.Error("the trigger is still on in local.settings.json")
	}
	flips, err := r.store.Circuits.Flips(t.Context(), "orders", "Process", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := circuit.Flip{Episode: 1, From: circuit.Closed, To: circuit.Open, At: r.clock.Now(), Actor: "evaluator",
		Count: 101, Threshold: 100, Window: 30 * time.Second, Reason: "101 failures in 30s (threshold 100)"}
	if len(flips) != 1 || flips[0] != want {
		t.Errorf("flip log = %+v, want [%+v]", flips, want)
	}

	// Ticking on, or a second evaluator after a restart, does not trip again.
	r.tick()
	r.eval = r.evaluator()
	r.tick()
	if c := r.circuit(); c.Episode != 1 {
		t.Errorf("episode %d after more ticks and a restart, want 1", c.Episode)
	}
}

func TestEvaluatorSeesOnlyNewRowsBetweenFullReads(t *testing.T) {
	r := newRig(t)
	r.tick() // first, full read
	for range 5 {
		r.clock.Advance(time.Second)
		r.fail("instance-a", 25, 0)
		r.tick()
	}
	if c := r.circuit(); c.State != circuit.Open || !strings.HasPrefix(c.Reason, "125 failures in 30s") {
		t.Errorf("after 125 failures in 5 s read incrementally: %s %q", c.State, c.Reason)
	}
}

func TestUnreadableRowsAreCountedAndSkipped(t *testing.T) {
	r := newRig(t)
	type badRow struct {
		tablestore.Meta
		App, Function string
		Second        string // not a date-time
		Count         int32
	}
	now := r.clock.Now()
	bad := &badRow{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(now), RowKey: "orders|Process|00|nodejs"}, App: "orders", Function: "Process", Second: "yesterday", Count: 5}
	if err := r.store.Service.Table(storage.TableFailures).Insert(t.Context(), bad); err != nil {
		t.Fatal(err)
	}
	r.fail("instance-a", 101, 0)
	r.tick()
	if c := r.circuit(); c.State != circuit.Open {
		t.Errorf("a bad row stopped the evaluator: %s", c.State)
	}
	st, err := r.store.Status.Evaluator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Rejected != 1 || !strings.Contains(st.LastRejected, "orders|Process|00|nodejs") {
		t.Errorf("status = %+v, want one rejected row named", st)
	}
}

func TestDriftIsRecordedAndClearedByOverride(t *testing.T) {
	r := newRig(t)
	r.fail("instance-a", 101, 0)
	r.tick()
	if !r.disabled() {
		t.Fatal("not tripped")
	}
	// Someone switches the function back on by hand.
	if err := localswitch.SetDisabled(r.settings, "Process", false); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(10 * time.Second)
	r.tick()
	c := r.circuit()
	if !strings.Contains(c.Drift, "someone switched it back on") || !c.DriftSince.Equal(r.clock.Now()) {
		t.Fatalf("drift = %q since %v", c.Drift, c.DriftSince)
	}
	if r.disabled() {
		t.Error("Fusebox fought the person who switched the trigger on; it should only report drift")
	}
	if err := r.store.Circuits.Reapply(t.Context(), "orders", "Process"); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	r.tick()
	if c := r.circuit(); c.Drift != "" || c.Pending() || !r.disabled() {
		t.Errorf("after override: drift %q pending %v trigger off %v", c.Drift, c.Pending(), r.disabled())
	}
}

func TestStaleEvaluatorCannotTrip(t *testing.T) {
	r := newRig(t)
	newer := lease.Fence{Lease: "evaluator", Generation: 2}
	r.fail("instance-a", 101, 0)
	if err := r.eval.Tick(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	// The circuit was written under generation 2; resume it by hand, then
	// let the old generation try to trip it again.
	c := r.circuit()
	resumed, fl, err := circuit.Resume(c, "olivia", "", 0, r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.Circuits.Transition(t.Context(), lease.Fence{}, resumed, fl); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	r.fail("instance-a", 101, 0)
	err = r.evaluator().Tick(t.Context(), r.fence)
	if err == nil || !strings.Contains(err.Error(), "older generation") {
		t.Errorf("tick under generation 1: %v, want a fencing error", err)
	}
	if c := r.circuit(); c.State != circuit.Closed {
		t.Errorf("the stale evaluator changed the circuit to %s", c.State)
	}
}
