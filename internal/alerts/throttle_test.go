package alerts_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
)

// owedKinds is what Owed lists for c, as kind@episode.
func owedKinds(c circuit.Circuit, now time.Time) []string {
	var out []string
	for _, m := range alerts.Owed(c, []string{"ops@example.com"}, now, alerts.Policy{RemindEvery: 4 * time.Hour, MaxReminders: 3, Within: 24 * time.Hour}) {
		out = append(out, m.ID)
	}
	return out
}

// A throttle is told once, whatever its steps, and its ramp's end says the
// settings are back; a ramp after a resume is the resume's notice, and
// its end tells nobody again.
func TestAThrottleIsToldOnceAndItsEndOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, EventHub: "orders", Throttle: circuit.Throttle{Threshold: 40, Quiet: time.Minute}}, Episode: 3, ChangedAt: t0.Add(-time.Hour), Actuation: circuit.Actuation{AppliedEpisode: 3}}
	step := func(c circuit.Circuit, n int, at time.Time) circuit.Circuit {
		t.Helper()
		next, fl := circuit.Evaluate(c, circuit.Counts{Counted: n, Window: n, Since: at.Add(-30 * time.Second)}, at)
		if fl == nil {
			t.Fatalf("no change from %s with %d failures at %s", c.State, n, at)
		}
		next.AppliedEpisode, next.AppliedAt = next.Episode, at
		return next
	}
	throttled := step(c, 41, t0)
	first := owedKinds(throttled, t0)
	if len(first) != 1 || first[0] != alerts.MessageID("orders/Process", 4, alerts.KindThrottled, "ops@example.com") {
		t.Fatalf("throttled: owed %v; want one throttled notice", first)
	}
	half := step(throttled, 0, t0.Add(time.Minute))
	if got := owedKinds(half, t0.Add(time.Minute)); len(got) != 1 || got[0] != first[0] {
		t.Errorf("a step up owes %v; want the same notice as the throttle (already sent)", got)
	}
	closed := step(half, 0, t0.Add(2*time.Minute))
	if closed.State != circuit.Closed {
		t.Fatalf("after two quiet steps: %s", closed.State)
	}
	if got := owedKinds(closed, t0.Add(2*time.Minute)); len(got) != 1 || got[0] != alerts.MessageID("orders/Process", closed.Episode, alerts.KindRestored, "ops@example.com") {
		t.Errorf("the ramp's end owes %v; want one restored notice", got)
	}

	// Tripped, resumed: the resume is told once, its ramp's end not at all.
	open := step(closed, 101, t0.Add(3*time.Minute))
	resumed, _, err := circuit.Resume(open, "ops@example.com", "fixed", circuit.Counts{}, t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resumed.AppliedEpisode, resumed.AppliedAt = resumed.Episode, t0.Add(4*time.Minute)
	if got := owedKinds(resumed, t0.Add(4*time.Minute)); len(got) != 1 || got[0] != alerts.MessageID("orders/Process", resumed.Episode, alerts.KindResumed, "ops@example.com") {
		t.Errorf("the resume owes %v; want one resumed notice", got)
	}
	ramped := step(step(resumed, 0, t0.Add(5*time.Minute)), 0, t0.Add(6*time.Minute))
	if ramped.State != circuit.Closed {
		t.Fatalf("after the ramp: %s", ramped.State)
	}
	if got := owedKinds(ramped, t0.Add(6*time.Minute)); len(got) != 0 {
		t.Errorf("the end of a ramp after a resume owes %v; want nothing (the resume was told)", got)
	}
}
