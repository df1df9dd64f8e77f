package circuit_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/throttle"
)

// throttled is the rig's circuit with a throttle stage: an Event Hubs
// function, throttled on more than 40 failures, each stage quiet a minute.
func (r *rig) throttled(settings string) {
	r.t.Helper()
	if err := os.WriteFile(r.settings, []byte(settings), 0o600); err != nil {
		r.t.Fatal(err)
	}
	c := r.circuit()
	c.EventHub = "orders"
	c.Throttle = circuit.Throttle{Threshold: 40, Quiet: time.Minute}
	if err := r.store.Circuits.UpdateSettings(r.t.Context(), c); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) setting(name string) (string, bool) {
	r.t.Helper()
	s, err := localsettings.Settings(r.settings)
	if err != nil {
		r.t.Fatal(err)
	}
	v, ok := s[name]
	return v, ok
}

func (r *rig) wantSettings(when string, want map[string]string) {
	r.t.Helper()
	for name, v := range want {
		got, ok := r.setting(name)
		switch {
		case v == "" && ok:
			r.t.Errorf("%s: %s is %q; want it absent", when, name, got)
		case v != "" && got != v:
			r.t.Errorf("%s: %s is %q (set %v); want %q", when, name, got, ok, v)
		}
	}
}

func TestAThrottleLowersThenRampsBackToExactlyWhatWasThere(t *testing.T) {
	r := newRig(t)
	r.throttled(`{"IsEncrypted": false, "Values": {"AzureFunctionsJobHost__extensions__eventHubs__prefetchCount": "200", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"}}`)

	r.fail("instance-a", 41, 0)
	r.tick()
	c := r.circuit()
	if c.State != circuit.Throttled || c.Pending() || r.disabled() {
		t.Fatalf("after 41 failures: %s pending %v trigger off %v; want throttled, written, trigger on", c.State, c.Pending(), r.disabled())
	}
	// A quarter of what was there: the batch of the smallest default (10),
	// the prefetch the app set (200).
	r.wantSettings("throttled", map[string]string{throttle.EventHubMaxBatch: "2", throttle.EventHubPrefetch: "50", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"})
	if v := c.Lowered[throttle.EventHubPrefetch]; v == nil || *v != "200" {
		t.Errorf("recorded before: prefetch %v; want 200", v)
	}
	if v, ok := c.Lowered[throttle.EventHubMaxBatch]; !ok || v != nil {
		t.Errorf("recorded before: the batch size %v (recorded %v); want recorded as absent", v, ok)
	}

	// Failures keep coming at the throttle's rate: it holds.
	r.clock.Advance(30 * time.Second)
	r.fail("instance-a", 45, 0)
	r.tick()
	if c := r.circuit(); c.State != circuit.Throttled || c.ThrottleStage != 0 {
		t.Fatalf("still failing: %s stage %d", c.State, c.ThrottleStage)
	}
	// Held a minute, and the last window under the rule: up to half.
	r.clock.Advance(31 * time.Second)
	r.tick()
	if c := r.circuit(); c.State != circuit.Throttled || c.ThrottleStage != 1 {
		t.Fatalf("quiet: %s stage %d; want throttled at half", c.State, c.ThrottleStage)
	}
	r.wantSettings("at half", map[string]string{throttle.EventHubMaxBatch: "5", throttle.EventHubPrefetch: "100"})

	// Another quiet minute: back exactly, the absent batch size removed.
	r.clock.Advance(time.Minute)
	r.tick()
	c = r.circuit()
	if c.State != circuit.Closed || c.Pending() || c.Lowered != nil {
		t.Fatalf("quiet at half: %s pending %v lowered %v; want closed and nothing lowered", c.State, c.Pending(), c.Lowered)
	}
	r.wantSettings("restored", map[string]string{throttle.EventHubMaxBatch: "", throttle.EventHubPrefetch: "200", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"})
}

func TestThrottlingThatIsNotEnoughTripsAndTheResumeRamps(t *testing.T) {
	r := newRig(t)
	r.throttled(`{"Values": {}}`)
	r.fail("instance-a", 50, 0)
	r.tick()
	if c := r.circuit(); c.State != circuit.Throttled {
		t.Fatalf("after 50: %s", c.State)
	}
	r.clock.Advance(10 * time.Second)
	r.fail("instance-a", 101, 0) // after the throttle was written: it was not enough
	r.tick()
	c := r.circuit()
	if c.State != circuit.Open || c.Pending() || !r.disabled() {
		t.Fatalf("after 101 more: %s pending %v trigger off %v; want open and off", c.State, c.Pending(), r.disabled())
	}
	r.wantSettings("open", map[string]string{throttle.EventHubMaxBatch: "2", throttle.EventHubPrefetch: "75"})

	svc := circuit.NewService(r.store.Breaker(), nopAudit{}, r.clock.Now, circuit.ServiceSettings{})
	if _, err := svc.Flip(t.Context(), "orders", "Process", "ops@example.com", "fixed", circuit.Resuming); err != nil {
		t.Fatal(err)
	}
	r.tick()
	c = r.circuit()
	if c.State != circuit.Throttled || c.Pending() || r.disabled() {
		t.Fatalf("resumed: %s pending %v trigger off %v; want throttled with the trigger on", c.State, c.Pending(), r.disabled())
	}
	r.wantSettings("resumed", map[string]string{throttle.EventHubMaxBatch: "2", throttle.EventHubPrefetch: "75"})
	for range 2 {
		r.clock.Advance(time.Minute)
		r.tick()
	}
	if c := r.circuit(); c.State != circuit.Closed {
		t.Fatalf("two quiet minutes after the resume: %s", c.State)
	}
	r.wantSettings("ramped", map[string]string{throttle.EventHubMaxBatch: "", throttle.EventHubPrefetch: ""})
}

// A throttle that cannot be recorded (a row written by hand names no
// trigger kind) is told why on its own circuit, and holds up no other
// circuit of the app: a trip decided in the same tick is written.
func TestAThrottleThatCannotBeRecordedHoldsUpNoTrip(t *testing.T) {
	r := newRig(t)
	c := r.circuit()
	c.Throttle = circuit.Throttle{Threshold: 40} // no kind, no event hub, no queue: Validate refuses it, storage does not
	if err := r.store.Circuits.UpdateSettings(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Failures.Record(t.Context(), "w", []storage.Report{
		{App: "orders", Function: "Process", Second: r.clock.Now(), Count: 41},
		{App: "orders", Function: "Import", Second: r.clock.Now(), Count: 101},
	}); err != nil {
		t.Fatal(err)
	}
	r.tick()
	imp, err := r.store.Circuits.Get(t.Context(), "orders", "Import")
	if err != nil || imp.State != circuit.Open || imp.Pending() {
		t.Fatalf("Import: %s pending %v (%v); want tripped and switched off beside the unrecordable throttle", imp.State, imp.Pending(), err)
	}
	if off, _ := localsettings.Disabled(r.settings, "Import"); !off {
		t.Error("Import's trigger is on")
	}
	p := r.circuit()
	if p.State != circuit.Throttled || !p.Pending() || !strings.Contains(p.ApplyError, "trigger kind is not known") {
		t.Errorf("Process: %s pending %v, %q; want throttled, not applied, saying why", p.State, p.Pending(), p.ApplyError)
	}
}

// A setting someone changes by hand while a throttle holds it is theirs:
// the drift check hands it back (the circuit says which and why), no later
// step writes over it, and the end of the ramp does not put back what was
// there before; the settings it still holds ramp back as ever.
func TestASettingChangedByHandWhileThrottledIsLeftAsSet(t *testing.T) {
	r := newRig(t)
	r.throttled(`{"IsEncrypted": false, "Values": {"AzureFunctionsJobHost__extensions__eventHubs__prefetchCount": "200", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"}}`)
	r.fail("instance-a", 41, 0)
	r.tick()
	if c := r.circuit(); c.State != circuit.Throttled || c.Pending() {
		t.Fatalf("after 41 failures: %s pending %v; want throttled and written", c.State, c.Pending())
	}
	r.wantSettings("throttled", map[string]string{throttle.EventHubMaxBatch: "2", throttle.EventHubPrefetch: "50"})

	// Someone raises the batch size by hand: 2 is too slow for them.
	if err := localsettings.Tune(r.settings, nil, map[string]*string{throttle.EventHubMaxBatch: ptr("64")}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(11 * time.Second) // the drift check's next turn
	r.tick()
	c := r.circuit()
	if _, held := c.Lowered[throttle.EventHubMaxBatch]; held || c.Lowered[throttle.EventHubPrefetch] == nil {
		t.Fatalf("after the hand change the throttle holds %v; want only the prefetch", c.Lowered)
	}
	if want := throttle.EventHubMaxBatch + " set to 64 by hand while the throttle held it at 2"; c.Released != want {
		t.Errorf("released %q; want %q", c.Released, want)
	}
	r.clock.Advance(11 * time.Second)
	r.tick()
	if again := r.circuit(); again.Released != c.Released {
		t.Errorf("a second drift check changed what was handed back: %q", again.Released)
	}

	// The ramp: half, then closed; the batch size stays as it was set.
	r.clock.Advance(time.Minute)
	r.tick()
	r.wantSettings("at half", map[string]string{throttle.EventHubMaxBatch: "64", throttle.EventHubPrefetch: "100"})
	r.clock.Advance(time.Minute)
	r.tick()
	c = r.circuit()
	if c.State != circuit.Closed || c.Pending() {
		t.Fatalf("after the ramp: %s pending %v", c.State, c.Pending())
	}
	r.wantSettings("restored", map[string]string{throttle.EventHubMaxBatch: "64", throttle.EventHubPrefetch: "200", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"})
	if !strings.Contains(c.Reason, "changed by hand meanwhile and left as set ("+throttle.EventHubMaxBatch+" set to 64") {
		t.Errorf("the close says %q; want it to name what was left as set", c.Reason)
	}
}

func ptr(s string) *string { return &s }
