package circuit_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

func TestDecideWeighsOnlyTripsTheGuardrailLimits(t *testing.T) {
	now := t0.Add(time.Hour)
	tripping, quiet := full(101, now), full(3, now)
	shadow := base(circuit.Closed)
	shadow.Shadow = true
	halfOpen := base(circuit.HalfOpen)
	twoOff := circuit.Guardrail{MaxOff: 2}
	tests := []struct {
		name                string
		c                   circuit.Circuit
		n                   circuit.Counts
		g                   circuit.Guardrail
		off, total          int
		changes             bool
		wantTo              circuit.State
		wantGuard, wantHeld bool
	}{
		{"no guardrail: the trip is the circuit's alone", base(circuit.Closed), tripping, circuit.Guardrail{}, 9, 10, true, circuit.Open, false, false},
		{"under the limit: admitted, storage weighs it again", base(circuit.Closed), tripping, twoOff, 1, 10, true, circuit.Open, true, false},
		{"at the limit: held, the trigger left on", base(circuit.Closed), tripping, twoOff, 2, 10, true, circuit.Closed, false, true},
		{"a share of the app's circuits", base(circuit.Closed), tripping, circuit.Guardrail{MaxShare: 0.5}, 2, 4, true, circuit.Closed, false, true},
		{"a shadow circuit switches nothing: never weighed", shadow, tripping, twoOff, 5, 10, true, circuit.Open, false, false},
		{"no trip: nothing to weigh", base(circuit.Closed), quiet, twoOff, 5, 10, false, circuit.Closed, false, false},
		{"a trial that fails again switches the trigger off again: weighed", halfOpen, circuit.Counts{Window: 1, Counted: 1, Since: t0}, twoOff, 5, 10, true, circuit.HalfOpen, false, true},
		{"an open circuit's trigger is off already: not weighed", base(circuit.Open), tripping, twoOff, 5, 10, false, circuit.Open, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := circuit.Decide(tt.c, tt.n, now, tt.g, tt.off, tt.total)
			switch {
			case !tt.changes && d.Flip != nil:
				t.Fatalf("changed to %s: %s", d.Flip.To, d.Flip.Reason)
			case !tt.changes:
				return
			case d.Flip == nil:
				t.Fatalf("no change, want %s", tt.wantTo)
			}
			if d.Next.State != tt.wantTo || d.Flip.To != tt.wantTo {
				t.Errorf("to %s (flip %s), want %s", d.Next.State, d.Flip.To, tt.wantTo)
			}
			if d.Guarded != tt.wantGuard || d.Held != tt.wantHeld || d.Next.Held != tt.wantHeld {
				t.Errorf("guarded %v held %v, want %v %v", d.Guarded, d.Held, tt.wantGuard, tt.wantHeld)
			}
		})
	}
}

func TestATallyCloneSharesNothing(t *testing.T) {
	orig := circuit.NewTally()
	orig.Count("orders", circuit.Open, circuit.EvaluatorActor)
	orig.CountApply(circuit.SwitchKind("arm"), nil, time.Second)
	orig.Settle([]circuit.Circuit{base(circuit.Open)}, t0)
	c := orig.Clone()
	orig.Count("orders", circuit.Open, circuit.EvaluatorActor)
	orig.CountApply(circuit.SwitchKind("arm"), nil, time.Second)
	orig.ByState["orders"]["open"]++
	if got := c.Trips["orders"][circuit.ActorEvaluator]; got != 1 {
		t.Errorf("clone's trips = %d, want 1", got)
	}
	if got := c.Applies["arm"]["ok"]; got != 1 {
		t.Errorf("clone's applies = %d, want 1", got)
	}
	if h := c.ApplyLatency["arm"]; h.Count != 1 || h.Counts[len(h.Counts)-1] != 1 {
		t.Errorf("clone's latency = %+v, want one sample", h)
	}
	if got := c.ByState["orders"]["open"]; got != 1 {
		t.Errorf("clone's open circuits = %d, want 1", got)
	}
}
