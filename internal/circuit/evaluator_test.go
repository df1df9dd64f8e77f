package circuit_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

type rig struct {
	t        *testing.T
	store    *storage.Store
	clock    *clock.Fake
	settings string // the demo app's local.settings.json
	eval     *circuit.Evaluator
	fence    lease.Fence // the books' lease: this rig's evaluator keeps them
	claims   *lease.Locker
}

func newRig(t *testing.T) *rig {
	t.Helper()
	svc, _ := testenv.Storage(t)
	for _, name := range []string{storage.TableApps, storage.TableCircuits, storage.TableFailures, storage.TableStatus, storage.TableLeases} {
		if err := svc.CreateTable(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	st := storage.New(svc)
	r := &rig{t: t, store: st, clock: clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)),
		settings: filepath.Join(t.TempDir(), "local.settings.json"), fence: lease.Fence{Lease: "evaluator", Generation: 1}}
	claims, err := lease.NewClaims(st.Leases, "rig", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.claims = claims
	if err := st.Apps.Put(t.Context(), circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: r.settings}); err != nil {
		t.Fatal(err)
	}
	if err := st.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	r.eval = r.evaluator()
	return r
}

func (r *rig) evaluator() *circuit.Evaluator {
	return circuit.NewEvaluator(r.store.Breaker(), switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}},
		circuit.EvaluatorSettings{Claims: r.claims, Clock: r.clock, DriftEvery: 10 * time.Second})
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
	r.eval.Wait() // the tick's switch calls run beside it
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
	off, err := localsettings.Disabled(r.settings, "Process")
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
		Count: 101, Calls: 101, Since: r.clock.Now().Add(-30 * time.Second), Threshold: 100, Window: 30 * time.Second, Reason: "101 failures in 30s (threshold 100)"}
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
	// Later ticks, and pages reading the same window, count it no more.
	if _, _, err := r.store.Failures.Reader().Window(t.Context(), now.Add(-time.Minute), now); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	r.tick()
	if st, err := r.store.Status.Evaluator(t.Context()); err != nil || st.Rejected != 1 {
		t.Errorf("after another tick: %d rejected (err %v), want still 1", st.Rejected, err)
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
	if err := localsettings.SetDisabled(r.settings, "Process", false); err != nil {
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
	if err := r.store.Circuits.Reapply(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	r.tick()
	if c := r.circuit(); c.Drift != "" || c.Pending() || !r.disabled() {
		t.Errorf("after override: drift %q pending %v trigger off %v", c.Drift, c.Pending(), r.disabled())
	}
}

// moveFirst is storage as a paused instance sees it: the circuits it read
// before the pause, while an operator changes the circuit before its write.
type moveFirst struct {
	circuit.CircuitStore
	before func()
}

func (m moveFirst) Transition(ctx context.Context, f lease.Fence, c circuit.Circuit, fl circuit.Flip) error {
	m.before()
	return m.CircuitStore.Transition(ctx, f, c, fl)
}

// movingFirst is st whose circuits are moved by before ahead of each
// transition.
func movingFirst(st circuit.Stores, before func()) circuit.Stores {
	st.Circuits = moveFirst{st.Circuits, before}
	return st
}

// Every instance evaluates; what keeps a late one from undoing a newer
// change is the circuit's version. An instance that read the circuit
// closed, paused, and writes its trip after an operator forced the circuit
// open is refused, and says nothing of it as an error: losing that race is
// normal when several instances evaluate.
func TestALateDecisionIsRefusedByTheCircuitsVersion(t *testing.T) {
	r := newRig(t)
	r.fail("instance-a", 101, 0)
	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, r.clock.Now, circuit.ServiceSettings{})
	late := circuit.NewEvaluator(movingFirst(r.store.Breaker(), func() {
		if _, err := svc.Flip(t.Context(), "orders", "Process", "olivia", "planned maintenance", circuit.Tripping); err != nil {
			t.Fatal(err)
		}
	}), switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}},
		circuit.EvaluatorSettings{Claims: r.claims, Clock: r.clock})
	if err := late.Tick(t.Context(), lease.Fence{}); err != nil {
		t.Errorf("a lost race reported as an error: %v", err)
	}
	late.Wait()
	c := r.circuit()
	if c.State != circuit.ForcedOpen || c.Episode != 1 {
		t.Fatalf("after the late trip: %s episode %d, want the operator's forced-open episode 1", c.State, c.Episode)
	}
	flips, err := r.store.Circuits.Flips(t.Context(), "orders", "Process", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(flips) != 1 || flips[0].Actor != "olivia" {
		t.Errorf("flip log %+v, want only the operator's", flips)
	}
}

// resume is an operator resuming through the service, as the pages do.
func (r *rig) resume() {
	r.t.Helper()
	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, r.clock.Now, circuit.ServiceSettings{})
	if _, err := svc.Flip(r.t.Context(), "orders", "Process", "olivia", "", circuit.Resuming); err != nil {
		r.t.Fatal(err)
	}
}

// The failures that opened a circuit are still in its window when someone
// resumes it a second later; they must not open it again. New failures
// past the threshold after the resume do.
func TestAResumedCircuitStaysResumed(t *testing.T) {
	r := newRig(t)
	if err := r.store.Service.CreateTable(t.Context(), storage.TableAudit); err != nil {
		t.Fatal(err)
	}
	r.fail("instance-a", 101, 0)
	r.tick()
	if c := r.circuit(); c.State != circuit.Open {
		t.Fatalf("not tripped: %s", c.State)
	}
	r.clock.Advance(time.Second)
	r.resume()
	for range 5 { // the window (30 s) still holds all 101
		r.clock.Advance(time.Second)
		r.tick()
	}
	c := r.circuit()
	if c.State != circuit.Closed || c.Episode != 2 {
		t.Fatalf("5 s after the resume: %s episode %d (%q); want closed, episode 2", c.State, c.Episode, c.Reason)
	}
	if r.disabled() {
		t.Fatal("the trigger is off again")
	}
	// 100 new failures: at the threshold, not past it.
	r.fail("instance-b", 100, 0)
	r.tick()
	if c := r.circuit(); c.State != circuit.Closed {
		t.Fatalf("100 new failures tripped it: %q", c.Reason)
	}
	r.clock.Advance(time.Second)
	r.fail("instance-b", 1, 0)
	r.tick()
	c = r.circuit()
	if c.State != circuit.Open || c.Episode != 3 || !strings.HasPrefix(c.Reason, "101 failures since 09:00:01 UTC") {
		t.Fatalf("after 101 new failures: %s episode %d %q", c.State, c.Episode, c.Reason)
	}
	flips, err := r.store.Circuits.Flips(t.Context(), "orders", "Process", 1)
	if err != nil || len(flips) != 1 || flips[0].Count != 101 || !flips[0].Since.Equal(time.Date(2026, 11, 30, 9, 0, 1, 0, time.UTC)) {
		t.Errorf("flip = %+v (err %v), want 101 counted since the resume", flips, err)
	}
}

// A failure in the last second of the window counts; one second older does not.
func TestTheLastSecondOfTheWindow(t *testing.T) {
	r := newRig(t)
	r.clock.Advance(time.Hour) // long after the circuit's last change
	r.fail("instance-a", 1, 29*time.Second)
	r.fail("instance-a", 100, 0)
	r.fail("instance-b", 50, 30*time.Second)
	r.tick()
	if c := r.circuit(); c.State != circuit.Open || !strings.HasPrefix(c.Reason, "101 failures in 30s") {
		t.Errorf("with one failure 29 s ago: %s %q", c.State, c.Reason)
	}
}

// A writer whose clock runs 60 s ahead writes rows for seconds that have
// not come yet; they count once their second enters the window, even
// though they were read long before.
func TestAWriterAheadIsCountedWhenItsSecondComes(t *testing.T) {
	r := newRig(t)
	r.clock.Advance(time.Hour)
	r.tick() // a full read
	err := r.store.Failures.Record(t.Context(), "skewed", []storage.Report{{App: "orders", Function: "Process", Second: r.clock.Now().Add(60 * time.Second), Count: 101}})
	if err != nil {
		t.Fatal(err)
	}
	for range 59 {
		r.clock.Advance(time.Second)
		r.tick()
	}
	if c := r.circuit(); c.State != circuit.Closed {
		t.Fatalf("tripped on failures of a second still to come: %q", c.Reason)
	}
	r.clock.Advance(time.Second)
	r.tick()
	if c := r.circuit(); c.State != circuit.Open {
		t.Errorf("when the skewed writer's second came: %s", c.State)
	}
}

type nopAudit struct{}

func (nopAudit) Append(context.Context, audit.Entry) error { return nil }

// countingSwitch records every Apply, and hangs for apps in hang until
// the call's context ends.
type countingSwitch struct {
	circuit.Switch
	mu      sync.Mutex
	calls   []map[string]bool
	hang    map[string]bool
	applied chan string
	fail    error
}

func (s *countingSwitch) Apply(ctx context.Context, app circuit.App, off map[string]bool) error {
	s.mu.Lock()
	s.calls = append(s.calls, off)
	hang, fail := s.hang[app.ID], s.fail
	s.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail != nil {
		return fail
	}
	err := s.Switch.Apply(ctx, app, off)
	if s.applied != nil {
		s.applied <- app.ID
	}
	return err
}

// An app whose switch hangs does not delay another app's trip, nor the
// evaluator's ticks.
func TestAHangingAppDoesNotDelayAnother(t *testing.T) {
	r := newRig(t)
	slowSettings := filepath.Join(t.TempDir(), "slow.json")
	if err := r.store.Apps.Put(t.Context(), circuit.App{ID: "slow", Switch: circuit.SwitchLocal, LocalSettings: slowSettings}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "slow", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	sw := &countingSwitch{Switch: switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}}, hang: map[string]bool{"slow": true}, applied: make(chan string, 4)}
	r.eval = circuit.NewEvaluator(r.store.Breaker(), sw, circuit.EvaluatorSettings{Claims: r.claims, Clock: r.clock, ApplyTimeout: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); r.eval.Wait() }()

	// The slow app trips first and hangs in its switch.
	if err := r.store.Failures.Record(t.Context(), "w", []storage.Report{{App: "slow", Function: "Process", Second: r.clock.Now(), Count: 101}}); err != nil {
		t.Fatal(err)
	}
	if err := r.eval.Tick(ctx, r.fence); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	r.fail("instance-a", 101, 0)
	start := time.Now()
	if err := r.eval.Tick(ctx, r.fence); err != nil {
		t.Fatal(err)
	}
	select {
	case app := <-sw.applied:
		if app != "orders" {
			t.Fatalf("applied %s", app)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("orders was not switched within 10 s while slow hangs")
	}
	t.Logf("orders switched %s after its tick began, while slow hangs", time.Since(start))
	if !r.disabled() {
		t.Error("orders' trigger is on")
	}
	slow, err := r.store.Circuits.Get(t.Context(), "slow", "Process")
	if err != nil || slow.State != circuit.Open || !slow.Pending() {
		t.Errorf("slow = %s pending %v (err %v), want open and still switching", slow.State, slow.Pending(), err)
	}
}

// Circuits of one app that change in the same tick are one switch call:
// one write of the settings, one restart of the app.
func TestCircuitsOfOneAppAreSwitchedTogether(t *testing.T) {
	r := newRig(t)
	for _, f := range []string{"Import", "Export"} {
		if err := r.store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: f, Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
			t.Fatal(err)
		}
	}
	sw := &countingSwitch{Switch: switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}}}
	r.eval = circuit.NewEvaluator(r.store.Breaker(), sw, circuit.EvaluatorSettings{Claims: r.claims, Clock: r.clock})
	var reports []storage.Report
	for _, f := range []string{"Process", "Import", "Export"} {
		reports = append(reports, storage.Report{App: "orders", Function: f, Second: r.clock.Now(), Count: 101})
	}
	if err := r.store.Failures.Record(t.Context(), "w", reports); err != nil {
		t.Fatal(err)
	}
	r.tick()
	if len(sw.calls) != 1 || len(sw.calls[0]) != 3 {
		t.Fatalf("switch calls = %v, want one with three functions", sw.calls)
	}
	for _, f := range []string{"Process", "Import", "Export"} {
		if off, _ := localsettings.Disabled(r.settings, f); !off {
			t.Errorf("%s is on", f)
		}
	}
}

// A switch that keeps failing (403, app gone) is retried with a growing
// wait, not every tick, and says why on the circuit.
func TestAFailingSwitchBacksOffAndSaysWhy(t *testing.T) {
	r := newRig(t)
	sw := &countingSwitch{Switch: switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}}, fail: errors.New("403: give Fusebox the Website Contributor role")}
	r.eval = circuit.NewEvaluator(r.store.Breaker(), sw, circuit.EvaluatorSettings{Claims: r.claims, Clock: r.clock, RetryFirst: 2 * time.Second, RetryMax: 8 * time.Second})
	r.fail("instance-a", 101, 0)
	r.tick()
	c := r.circuit()
	if !c.Stuck() || !strings.Contains(c.ApplyError, "Website Contributor") || c.ApplyAttempts != 1 || !c.ApplyRetryAt.Equal(r.clock.Now().Add(2*time.Second)) {
		t.Fatalf("after one failure: stuck %v error %q attempts %d retry %v", c.Stuck(), c.ApplyError, c.ApplyAttempts, c.ApplyRetryAt)
	}
	// Ticks every second for 20 s: tries at 0, 2, 6, 14 (waits 2, 4, 8, 8...).
	for range 20 {
		r.clock.Advance(time.Second)
		r.tick()
	}
	if n := len(sw.calls); n != 4 {
		t.Errorf("%d tries in 20 s, want 4 (backoff 2s, 4s, 8s, capped at 8s)", n)
	}
	// Once the role is granted the next try succeeds and the error is gone.
	sw.mu.Lock()
	sw.fail = nil
	sw.mu.Unlock()
	r.clock.Advance(8 * time.Second)
	r.tick()
	if c := r.circuit(); c.Pending() || c.ApplyError != "" || !r.disabled() {
		t.Errorf("after the fix: pending %v error %q off %v", c.Pending(), c.ApplyError, r.disabled())
	}
}

// A circuit whose trigger cannot be switched (the app was deleted) can be
// deleted by an operator, whatever its state; an open one that works cannot.
func TestAStuckCircuitCanBeDeleted(t *testing.T) {
	r := newRig(t)
	if err := r.store.Service.CreateTable(t.Context(), storage.TableAudit); err != nil {
		t.Fatal(err)
	}
	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, r.clock.Now, circuit.ServiceSettings{})
	r.fail("instance-a", 101, 0)
	r.tick()
	if err := svc.Delete(t.Context(), "orders", "Process", "olivia"); !errors.Is(err, circuit.ErrStillOpen) {
		t.Errorf("deleting an open circuit whose trigger is off: %v, want ErrStillOpen", err)
	}
	sw := &countingSwitch{Switch: switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}}, fail: errors.New("404: func-orders was not found: was the app deleted or renamed?")}
	r.eval = circuit.NewEvaluator(r.store.Breaker(), sw, circuit.EvaluatorSettings{Claims: r.claims, Clock: r.clock})
	r.clock.Advance(time.Second)
	r.resume() // the trigger must go back on, and cannot
	r.tick()
	if c := r.circuit(); !c.Stuck() {
		t.Fatalf("not stuck: pending %v error %q", c.Pending(), c.ApplyError)
	}
	if err := svc.Delete(t.Context(), "orders", "Process", "olivia"); err != nil {
		t.Fatalf("deleting a stuck circuit: %v", err)
	}
	if _, err := r.store.Circuits.Get(t.Context(), "orders", "Process"); !errors.Is(err, circuit.ErrNotFound) {
		t.Errorf("the circuit is still there: %v", err)
	}
}

// A ratio circuit counts rows of writers that report successes and rows of
// older writers that never do (no Successes property at all) alike.
func TestARatioCircuitMixesOldAndNewRows(t *testing.T) {
	r := newRig(t)
	c := r.circuit()
	c.Rule = circuit.Rule{Ratio: 0.5, MinCalls: 100}
	if err := r.store.Circuits.Put(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Hour)
	now := r.clock.Now()
	// An older writer's row: the documented layout before Successes existed.
	type oldRow struct {
		tablestore.Meta
		App, Function string
		Second        time.Time
		Count         int32
	}
	old := &oldRow{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(now), RowKey: storage.FailureRowKey("orders", "Process", now, "old-writer")},
		App: "orders", Function: "Process", Second: now.UTC().Truncate(time.Second), Count: 40}
	if err := r.store.Service.Table(storage.TableFailures).Insert(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	// A newer writer: 9 failures and 60 successes. 49 of 109 calls failed.
	if err := r.store.Failures.Record(t.Context(), "new-writer", []storage.Report{{App: "orders", Function: "Process", Second: now, Count: 9, Successes: 60}}); err != nil {
		t.Fatal(err)
	}
	r.tick()
	if c := r.circuit(); c.State != circuit.Closed {
		t.Fatalf("49 of 109 calls tripped a 50 %% rule: %q", c.Reason)
	}
	st, _ := r.store.Status.Evaluator(t.Context())
	if st.Rejected != 0 {
		t.Fatalf("a row without Successes was rejected: %s", st.LastRejected)
	}
	r.clock.Advance(time.Second)
	if err := r.store.Failures.Record(t.Context(), "new-writer", []storage.Report{{App: "orders", Function: "Process", Second: r.clock.Now(), Count: 12}}); err != nil {
		t.Fatal(err)
	}
	r.tick()
	if c := r.circuit(); c.State != circuit.Open || !strings.HasPrefix(c.Reason, "50.4 % of 121 calls failed") {
		t.Errorf("61 of 121 calls: %s %q", c.State, c.Reason)
	}
}

// In shadow mode a circuit trips, logs and alerts as it would, but its
// trigger stays on; arming it, an audited operator action, switches the
// trigger to follow the circuit.
func TestAShadowCircuitNeverMovesTheTriggerUntilArmed(t *testing.T) {
	r := newRig(t)
	if err := r.store.Service.CreateTable(t.Context(), storage.TableAudit); err != nil {
		t.Fatal(err)
	}
	c := r.circuit()
	c.Shadow = true
	if err := r.store.Circuits.Put(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	r.fail("instance-a", 101, 0)
	r.tick()
	c = r.circuit()
	if c.State != circuit.Open || c.Pending() || !strings.HasPrefix(c.Reason, "shadow mode, trigger left as it is: 101 failures") {
		t.Fatalf("shadow trip: %s pending %v %q", c.State, c.Pending(), c.Reason)
	}
	if r.disabled() {
		t.Fatal("a shadow circuit switched the trigger off")
	}
	r.clock.Advance(10 * time.Second) // a drift check: the trigger on while open is no drift in shadow mode
	r.tick()
	if c := r.circuit(); c.Drift != "" {
		t.Errorf("shadow circuit reported drift %q", c.Drift)
	}
	svc := circuit.NewService(r.store.Breaker(), r.store.Audit, r.clock.Now, circuit.ServiceSettings{})
	if _, err := svc.Update(t.Context(), "orders", "Process", circuit.Settings{Threshold: 100, Window: 30 * time.Second}, "olivia"); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	r.tick()
	if !r.disabled() {
		t.Error("arming the open circuit did not switch the trigger off")
	}
	entries, err := r.store.Audit.Recent(t.Context(), r.clock.Now(), 5)
	if err != nil || len(entries) == 0 || entries[0].Action != "armed circuit" || entries[0].Actor != "olivia" {
		t.Errorf("audit = %+v (err %v), want olivia's armed circuit", entries, err)
	}
}

// The app's guardrail lets the evaluator switch off at most so many of its
// circuits; the next trip is held: logged as what it would have been, the
// trigger left on, and not held again for the same failures.
func TestTheGuardrailHoldsTheTripBeyondItsLimit(t *testing.T) {
	r := newRig(t)
	if err := r.store.Apps.Put(t.Context(), circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: r.settings, Guardrail: circuit.Guardrail{MaxOff: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	r.fail("instance-a", 101, 0)
	r.tick()
	if err := r.store.Failures.Record(t.Context(), "w", []storage.Report{{App: "orders", Function: "Import", Second: r.clock.Now(), Count: 150}}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	r.tick()
	if c := r.circuit(); c.State != circuit.Open {
		t.Fatalf("the first trip was held: %s", c.State)
	}
	imp, err := r.store.Circuits.Get(t.Context(), "orders", "Import")
	if err != nil {
		t.Fatal(err)
	}
	if imp.State != circuit.Closed || !imp.Held || !strings.HasPrefix(imp.Reason, "held by guardrail (1 of the app's circuits already off, at most 1): would have tripped: 150 failures") {
		t.Fatalf("the second trip: %s held %v %q", imp.State, imp.Held, imp.Reason)
	}
	if off, _ := localsettings.Disabled(r.settings, "Import"); off {
		t.Error("the held circuit's trigger was switched off")
	}
	episode := imp.Episode
	for range 3 {
		r.clock.Advance(time.Second)
		r.tick()
	}
	if again, _ := r.store.Circuits.Get(t.Context(), "orders", "Import"); again.Episode != episode {
		t.Errorf("the same failures were held again: episode %d, want %d", again.Episode, episode)
	}
}

func TestGuardrailLimits(t *testing.T) {
	for _, tc := range []struct {
		g     circuit.Guardrail
		total int
		want  int
	}{
		{circuit.Guardrail{}, 10, -1},
		{circuit.Guardrail{MaxOff: 3}, 10, 3},
		{circuit.Guardrail{MaxShare: 0.5}, 10, 5},
		{circuit.Guardrail{MaxShare: 0.5}, 3, 1},
		{circuit.Guardrail{MaxOff: 3, MaxShare: 0.2}, 10, 2},
	} {
		if got := tc.g.Limit(tc.total); got != tc.want {
			t.Errorf("%+v of %d: %d, want %d", tc.g, tc.total, got, tc.want)
		}
	}
	var v circuit.ValidationError
	if err := (circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: "x", Guardrail: circuit.Guardrail{MaxShare: 1.5}}).Validate(); !errors.As(err, &v) || v.For("guardrail_share") == "" {
		t.Errorf("a guardrail of 150 %%: %v", err)
	}
}

// readCounter counts the reads a report's check makes.
type readCounter struct {
	circuit.FailureStore
	mu    sync.Mutex
	reads int
}

func (c *readCounter) CircuitWindow(ctx context.Context, appID, function string, from, to time.Time) ([]circuit.FailureRow, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.FailureStore.CircuitWindow(ctx, appID, function, from, to)
}

func (c *readCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// A report is checked at once only when it could change a circuit: what
// the last tick counted plus what was reported since, under the circuit's
// own rule. Reports far from a threshold, or for functions without a
// circuit, cost no read. One that crosses trips the circuit and switches
// its trigger with no tick: one read of the circuit's window.
func TestOnlyAReportThatMayTripIsCheckedAndItTripsAtOnce(t *testing.T) {
	r := newRig(t)
	stores := r.store.Breaker()
	store := &readCounter{FailureStore: stores.Failures}
	stores.Failures = store
	r.eval = circuit.NewEvaluator(stores, switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}},
		circuit.EvaluatorSettings{Claims: r.claims, Clock: r.clock})
	r.fail("instance-a", 60, 5*time.Second)
	r.tick() // counts 60 of the threshold's 100
	r.fail("instance-b", 30, 0)
	r.eval.CheckReported([]circuit.Reported{{AppID: "orders", Function: "Process", Failures: 30}})
	r.eval.CheckReported([]circuit.Reported{{AppID: "orders", Function: "Unknown", Failures: 1000}})
	r.eval.Wait()
	if n := store.count(); n != 0 {
		t.Fatalf("%d window reads with 90 of 100 failures known, or for a function without a circuit; want none", n)
	}
	r.fail("instance-c", 11, 0)
	r.eval.CheckReported([]circuit.Reported{{AppID: "orders", Function: "Process", Failures: 11}})
	r.eval.Wait() // the check and the switch call it started; no tick
	c := r.circuit()
	if c.State != circuit.Open || c.Pending() || !r.disabled() {
		t.Fatalf("after the 101st failure was reported: %s, pending %v, trigger off %v; want open and switched off without a tick", c.State, c.Pending(), r.disabled())
	}
	if n := store.count(); n != 1 {
		t.Errorf("%d window reads for the report that crossed, want 1", n)
	}
	if !strings.Contains(c.Reason, "101 failures") {
		t.Errorf("reason %q, want the count read afresh (101)", c.Reason)
	}
}

// A flip carries the time its change was decided, which can come a moment
// before it is written (a report's check decides, a tick counts, then the
// check writes). The books still count it, once.
func TestAChangeWrittenAfterTheBooksCountedIsCountedOnce(t *testing.T) {
	r := newRig(t)
	r.tick() // the books counted up to now
	decided := r.clock.Now().Add(-2 * time.Second)
	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, func() time.Time { return decided }, circuit.ServiceSettings{})
	if _, err := svc.Flip(t.Context(), "orders", "Process", "olivia", "decided two seconds before it was written", circuit.Tripping); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.clock.Advance(time.Second)
		r.tick()
	}
	st, err := r.store.Status.Evaluator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Tally.Trips["orders"][circuit.ActorOperator]; n != 1 {
		t.Errorf("the books count %d trips by an operator, want 1: %+v", n, st.Tally.Trips)
	}
}

// A new tenure of the books (the lease lost and taken again, as a fake
// clock's jump does in tests) starts from the stored totals, which hold
// every flip up to and including their instant: a trip made in the same
// instant as the last count is not counted a second time.
func TestANewTenureDoesNotCountAgainAFlipOfTheLastCountsInstant(t *testing.T) {
	r := newRig(t)
	r.tick()
	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, r.clock.Now, circuit.ServiceSettings{})
	r.clock.Advance(time.Second)
	if _, err := svc.Flip(t.Context(), "orders", "Process", "olivia", "in the very instant of the next count", circuit.Tripping); err != nil {
		t.Fatal(err)
	}
	r.tick() // counts the trip; the stored totals are at this instant
	r.newTenureCountsOneTrip()
}

// And the other side of the same instant: a trip written just after the
// last count, in the same instant (a fake clock's), is not in the stored
// totals; a new tenure starting there counts it, once.
func TestANewTenureCountsAFlipWrittenInTheLastCountsInstantAfterIt(t *testing.T) {
	r := newRig(t)
	r.tick()
	r.clock.Advance(time.Second)
	r.tick() // the books counted up to this instant, without the trip
	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, r.clock.Now, circuit.ServiceSettings{})
	if _, err := svc.Flip(t.Context(), "orders", "Process", "olivia", "written in the instant of the last count, after it", circuit.Tripping); err != nil {
		t.Fatal(err)
	}
	r.newTenureCountsOneTrip()
}

// newTenureCountsOneTrip hands the books to a new tenure without moving
// the clock, ticks on, and wants the one trip by an operator counted once.
func (r *rig) newTenureCountsOneTrip() {
	r.t.Helper()
	r.fence.Generation++
	r.tick() // a new tenure, the clock not moved
	r.clock.Advance(time.Second)
	r.tick()
	st, err := r.store.Status.Evaluator(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	if n := st.Tally.Trips["orders"][circuit.ActorOperator]; n != 1 {
		r.t.Errorf("the books count %d trips by an operator, want 1: %+v", n, st.Tally.Trips)
	}
}

// The overview asks Failing of every circuit: it counts those with failure
// rows, the same as Counts does, and leaves out the rest.
func TestFailingCountsOnlyTheCircuitsWithFailures(t *testing.T) {
	r := newRig(t)
	for _, c := range []circuit.Circuit{
		{AppID: "orders", Function: "Quiet", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed},
		{AppID: "orders", Function: "Short", Settings: circuit.Settings{Threshold: 100, Window: 10 * time.Second}, State: circuit.Closed},
	} {
		if err := r.store.Circuits.Put(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	r.fail("a", 5, 0)
	// Short failed 20 s ago: within the longest window, outside its own.
	if err := r.store.Failures.Record(t.Context(), "a", []storage.Report{{App: "orders", Function: "Short", Second: r.clock.Now().Add(-20 * time.Second), Count: 3}}); err != nil {
		t.Fatal(err)
	}
	all, err := r.store.Circuits.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, r.clock.Now, circuit.ServiceSettings{})
	failing, err := svc.Failing(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := svc.Counts(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := failing["orders/Quiet"]; ok || len(failing) != 2 {
		t.Errorf("Failing returned %v; want Process and Short only", failing)
	}
	for _, id := range []string{"orders/Process", "orders/Short"} {
		if failing[id] != counts[id] {
			t.Errorf("%s: Failing says %+v, Counts %+v", id, failing[id], counts[id])
		}
	}
	if failing["orders/Process"].Counted != 5 || failing["orders/Short"].Window != 0 {
		t.Errorf("Process counted %d (want 5), Short's window holds %d (want 0)", failing["orders/Process"].Counted, failing["orders/Short"].Window)
	}
}
