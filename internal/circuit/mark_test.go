package circuit_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// A downstream's mark stays on its episode while the evaluator settles
// the trial (closed, or open again), so the member tells no one on its
// own; a person's flip, or the next trip on the circuit's own counts,
// starts an episode of the circuit's own.
func TestADownstreamsMarkLastsItsEpisode(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 10, Window: time.Minute},
		State: circuit.HalfOpen, Episode: 2, Downstream: "inventory-db#1"}
	c.AppliedEpisode, c.AppliedAt = 2, now.Add(-2*time.Minute)
	closed, fl := circuit.Evaluate(c, circuit.Counts{}, now)
	if fl == nil || closed.State != circuit.Closed || closed.Downstream != "inventory-db#1" {
		t.Fatalf("a quiet trial: %s marked %q, want closed and still the downstream's", closed.State, closed.Downstream)
	}
	failed, fl := circuit.Evaluate(c, circuit.Counts{Counted: 1}, now)
	if fl == nil || failed.State != circuit.Open || failed.Downstream != "inventory-db#1" {
		t.Errorf("a failed trial: %s marked %q, want open and still the downstream's", failed.State, failed.Downstream)
	}
	closed.AppliedEpisode = closed.Episode
	own, fl := circuit.Evaluate(closed, circuit.Counts{Counted: 11}, now.Add(time.Minute))
	if fl == nil || own.State != circuit.Open || own.Downstream != "" {
		t.Errorf("a trip on its own counts: %s marked %q, want open and its own", own.State, own.Downstream)
	}
	resumed, _, err := circuit.Resume(failed, "bob", "fixed", circuit.Counts{}, now)
	if err != nil || resumed.Downstream != "" {
		t.Errorf("a person's resume keeps the mark %q (%v)", resumed.Downstream, err)
	}
}
