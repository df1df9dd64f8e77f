package circuit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// throttling is base with a throttle stage at more than 40 failures, quiet
// for 2 minutes, of an Event Hubs trigger.
func throttling(state circuit.State, stage int) circuit.Circuit {
	c := base(state)
	c.EventHub = "orders"
	c.Throttle = circuit.Throttle{Threshold: 40, Quiet: 2 * time.Minute}
	c.ThrottleStage = stage
	return c
}

func TestTheThrottleStages(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	since := func(n int, d time.Duration) circuit.Counts { // n failures counted since the stage began (t0), at t0+d
		return circuit.Counts{Window: n, Counted: n, Since: t0}
	}
	tests := []struct {
		name       string
		c          circuit.Circuit
		n          circuit.Counts
		now        time.Time
		wantState  circuit.State
		wantStage  int
		wantReason string // substring; "" means no transition
	}{
		{"closed at the throttle threshold stays closed", throttling(circuit.Closed, 0), full(40, at(time.Hour)), at(time.Hour), circuit.Closed, 0, ""},
		{"closed past the throttle threshold throttles", throttling(circuit.Closed, 0), full(41, at(time.Hour)), at(time.Hour), circuit.Throttled, 0, "41 failures in 30s, throttle at more than 40: concurrency lowered to a quarter of what it was"},
		{"past the trip threshold it trips, not throttles", throttling(circuit.Closed, 0), full(101, at(time.Hour)), at(time.Hour), circuit.Open, 0, "101 failures in 30s (threshold 100)"},
		{"without a throttle stage 41 is nothing", base(circuit.Closed), full(41, at(time.Hour)), at(time.Hour), circuit.Closed, 0, ""},
		{"throttled and still failing past the trip rule trips", throttling(circuit.Throttled, 0), since(101, time.Minute), at(time.Minute), circuit.Open, 0, "throttling was not enough: 101 failures in 30s (threshold 100)"},
		{"throttled at the lowest share holds while the throttle rule fires", throttling(circuit.Throttled, 0), since(60, 5*time.Minute), at(5 * time.Minute), circuit.Throttled, 0, ""},
		{"throttled waits for its settings before judging", unapplied(throttling(circuit.Throttled, 0)), since(500, time.Minute), at(time.Minute), circuit.Throttled, 0, ""},
		{"a quiet stage a nanosecond short holds", throttling(circuit.Throttled, 0), since(3, 0), at(2*time.Minute - time.Nanosecond), circuit.Throttled, 0, ""},
		{"a quiet stage steps up to half", throttling(circuit.Throttled, 0), since(3, 0), at(2 * time.Minute), circuit.Throttled, 1, "3 failures in the 2m at a quarter (throttle rule: more than 40): up to half of the concurrency before"},
		{"quiet at half restores what was there", throttling(circuit.Throttled, 1), since(0, 0), at(2 * time.Minute), circuit.Closed, 0, "concurrency restored as it was"},
		{"failing during the ramp steps back down", throttling(circuit.Throttled, 1), since(41, 0), at(time.Minute), circuit.Throttled, 0, "failures rose again during the ramp (41 failures in 30s, throttle at more than 40): back to a quarter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, fl := circuit.Evaluate(tt.c, tt.n, tt.now)
			if tt.wantReason == "" {
				if fl != nil {
					t.Fatalf("changed to %s: %s", next.State, fl.Reason)
				}
				return
			}
			if fl == nil {
				t.Fatalf("no change; want %s", tt.wantState)
			}
			if next.State != tt.wantState || next.ThrottleStage != tt.wantStage || !strings.Contains(fl.Reason, tt.wantReason) {
				t.Errorf("got %s stage %d %q; want %s stage %d with %q", next.State, next.ThrottleStage, fl.Reason, tt.wantState, tt.wantStage, tt.wantReason)
			}
			if next.Episode != tt.c.Episode+1 || fl.To != next.State {
				t.Errorf("a stage is a flip of its own: episode %d→%d, flip to %s", tt.c.Episode, next.Episode, fl.To)
			}
		})
	}
}

func TestAStageIsJudgedFromWhenItsSettingsWereWritten(t *testing.T) {
	c := applied(throttling(circuit.Throttled, 0), 20*time.Second)
	if got := c.CountsFrom(t0.Add(25 * time.Second)); !got.Equal(t0.Add(20 * time.Second)) {
		t.Errorf("counts from %s; want the write at 09:00:20", got)
	}
	if _, fl := circuit.Evaluate(c, circuit.Counts{Since: t0.Add(20 * time.Second)}, t0.Add(2*time.Minute+19*time.Second)); fl != nil {
		t.Errorf("stepped up 1s before its quiet time from the write: %s", fl.Reason)
	}
}

func TestAResumeRampsBackUp(t *testing.T) {
	for _, st := range []circuit.State{circuit.Open, circuit.ForcedOpen, circuit.HalfOpen} {
		next, fl, err := circuit.Resume(throttling(st, 0), "ops@example.com", "", circuit.Counts{}, t0.Add(time.Hour))
		if err != nil || next.State != circuit.Throttled || next.ThrottleStage != 0 || next.ThrottleShare() != 0.25 {
			t.Fatalf("resume from %s: %s stage %d share %v, %v; want throttled at a quarter", st, next.State, next.ThrottleStage, next.ThrottleShare(), err)
		}
		if !strings.Contains(fl.Reason, "resumed by ops@example.com; concurrency ramps back up from a quarter") {
			t.Errorf("reason %q", fl.Reason)
		}
		if next.State.TriggerOff() {
			t.Error("a ramp runs the trigger")
		}
	}
	// Resuming a throttled circuit is a person restoring it at once.
	next, _, err := circuit.Resume(throttling(circuit.Throttled, 0), "ops", "", circuit.Counts{}, t0)
	if err != nil || next.State != circuit.Closed || next.ThrottleShare() != 0 {
		t.Errorf("resume of a throttled circuit: %s share %v, %v; want closed", next.State, next.ThrottleShare(), err)
	}
	// Without a throttle stage a resume closes, as ever.
	if next, _, _ := circuit.Resume(base(circuit.Open), "ops", "", circuit.Counts{}, t0); next.State != circuit.Closed {
		t.Errorf("resume without a throttle stage: %s", next.State)
	}
}

func TestAThrottleWaitsForItsQuorum(t *testing.T) {
	c := throttling(circuit.Closed, 0)
	c.Rule.MinInstances = 2
	n := full(60, t0.Add(time.Hour))
	n.Instances = 1
	if _, fl := circuit.Evaluate(c, n, t0.Add(time.Hour)); fl != nil {
		t.Errorf("one instance throttled the app: %s", fl.Reason)
	}
	n.Instances = 2
	if next, fl := circuit.Evaluate(c, n, t0.Add(time.Hour)); fl == nil || next.State != circuit.Throttled || !strings.Contains(fl.Reason, "from 2 instances (quorum 2)") {
		t.Errorf("two instances: %v", fl)
	}
}

func TestThrottleSettingsAreValidated(t *testing.T) {
	app := &circuit.App{ID: "orders"}
	bad := map[string]circuit.Circuit{}
	add := func(field string, f func(*circuit.Circuit)) {
		c := throttling(circuit.Closed, 0)
		f(&c)
		bad[field] = c
	}
	add("throttle_threshold", func(c *circuit.Circuit) { c.Throttle.Threshold = 100 })
	add("throttle_quiet", func(c *circuit.Circuit) { c.Throttle.Quiet = 10 * time.Second })
	add("throttle_kind", func(c *circuit.Circuit) { c.EventHub = "" })
	for field, c := range bad {
		err := c.Validate(app)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: got %v", field, err)
		}
	}
	if err := throttling(circuit.Closed, 0).Validate(app); err != nil {
		t.Errorf("a good throttle stage: %v", err)
	}
	ratio := throttling(circuit.Closed, 0)
	ratio.Rule = circuit.Rule{Ratio: 0.5, MinCalls: 20}
	ratio.Throttle.Threshold = 500
	if err := ratio.Validate(app); err != nil {
		t.Errorf("a ratio rule's throttle is a count of its own: %v", err)
	}
}

func TestAThrottleThatAsksFirst(t *testing.T) {
	asking := throttling(circuit.Closed, 0)
	asking.Throttle.Ask = true
	now := t0.Add(time.Hour)
	asked, fl := circuit.Evaluate(asking, full(41, now), now)
	if fl == nil || asked.State != circuit.Closed || !asked.Asked || !strings.Contains(fl.Reason, "asking to lower concurrency to a quarter") {
		t.Fatalf("the rule fired: %s asked %v (%v); want closed, asking", asked.State, asked.Asked, fl)
	}
	// The question stands: no new episode (and notice) every tick.
	if _, fl := circuit.Evaluate(asked, circuit.Counts{Counted: 60, Window: 100, Since: now}, now.Add(10*time.Minute)); fl != nil {
		t.Errorf("asked again 10 minutes later: %s", fl.Reason)
	}
	if _, fl := circuit.Evaluate(asked, circuit.Counts{Counted: 60, Window: 100, Since: now}, now.Add(circuit.AskAgainAfter)); fl == nil {
		t.Error("not asked again after an hour unanswered")
	}
	// The trip rule does not wait for an answer.
	if next, _ := circuit.Evaluate(asked, circuit.Counts{Counted: 101, Window: 101, Since: now}, now.Add(time.Minute)); next.State != circuit.Open {
		t.Errorf("past the trip rule while asking: %s", next.State)
	}
	applied, f, err := circuit.ApplyThrottle(asked, "ops@example.com", circuit.Counts{}, now.Add(time.Minute))
	if err != nil || applied.State != circuit.Throttled || applied.Asked || !strings.Contains(f.Reason, "throttle applied by ops@example.com") {
		t.Fatalf("applied: %s asked %v %q, %v", applied.State, applied.Asked, f.Reason, err)
	}
	if _, _, err := circuit.ApplyThrottle(applied, "ops", circuit.Counts{}, now); err == nil {
		t.Error("applied twice")
	}
	if _, _, err := circuit.ApplyThrottle(throttling(circuit.Closed, 0), "ops", circuit.Counts{}, now); err == nil {
		t.Error("applied a throttle nobody asked about")
	}
}
