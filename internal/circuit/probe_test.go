package circuit_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// A probe is checked by field: https (http only to loopback), 1 to 20
// answers in a row, from 1 s to 10 min between calls; a stored probe that
// is not one is dropped, not obeyed.
func TestACircuitsProbeIsCheckedByField(t *testing.T) {
	cases := []struct {
		p                circuit.Probe
		url, good, every bool // which fields are refused
	}{
		{circuit.Probe{URL: "https://inventory.example.com/health"}, false, false, false},
		{circuit.Probe{URL: "https://inventory.example.com/health", Good: 5, Every: 30 * time.Second}, false, false, false},
		{circuit.Probe{URL: "http://inventory.example.com/health"}, true, false, false},
		{circuit.Probe{URL: "http://127.0.0.1:7072/health"}, false, false, false},
		{circuit.Probe{URL: "https://user:pw@inventory.example.com/"}, true, false, false},
		{circuit.Probe{URL: "https://inventory.example.com/", Good: 21, Every: 500 * time.Millisecond}, false, true, true},
		{circuit.Probe{Good: 99}, false, false, false}, // no URL: nothing to check
	}
	for _, tc := range cases {
		u, good, every := tc.p.Problems(true)
		if (u != "") != tc.url || (good != "") != tc.good || (every != "") != tc.every {
			t.Errorf("%+v: url %q, good %q, every %q", tc.p, u, good, every)
		}
	}
	stored, err := circuit.Spec{Threshold: 1, Window: circuit.Seconds(time.Minute), ProbeURL: "ftp://inventory.example.com/"}.Stored()
	if err != nil || stored.Probe != (circuit.Probe{}) {
		t.Errorf("a stored probe that is not one: %+v, %v; want it dropped", stored.Probe, err)
	}
	spec := circuit.Settings{Threshold: 1, Window: time.Minute, Probe: circuit.Probe{URL: "https://inventory.example.com/health", Good: 2, Every: 5 * time.Second}}.Spec()
	if spec.ProbeURL == "" || spec.Settings().Probe != (circuit.Probe{URL: "https://inventory.example.com/health", Good: 2, Every: 5 * time.Second}) {
		t.Errorf("the probe does not survive its spelling: %+v", spec)
	}
}

// What waits for a circuit's probe, when it is called, and when its
// answers start the trial: after the cooldown of an open circuit with
// AutoResume, or once an alert rule it names resolved (in this episode)
// for a forced-open one; good answers in a row, a bad one starting over.
func TestACircuitsProbeGatesItsAutomaticTrials(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	probe := circuit.Probe{URL: "https://inventory.example.com/health", Good: 2, Every: 5 * time.Second}
	open := circuit.Circuit{AppID: "orders", Function: "Process", State: circuit.Open, Episode: 4, ChangedAt: now, Actuation: circuit.Actuation{AppliedEpisode: 4, AppliedAt: now},
		Settings: circuit.Settings{Threshold: 10, Window: time.Minute, Probe: probe, Policy: circuit.Policy{AutoResume: true, Cooldown: time.Minute}}}
	var none circuit.ProbeRecord
	if w := open.ProbeWaits(none, now.Add(30*time.Second)); w != "" {
		t.Errorf("within the cooldown the probe waits for %q; want nothing", w)
	}
	after := open.TrialAt().Add(time.Second)
	if w := open.ProbeWaits(none, after); w == "" || !open.ProbeDue(none, after) {
		t.Fatalf("after the cooldown: waits %q, due %v; want the probe called", w, open.ProbeDue(none, after))
	}
	r := none.Heard(4, circuit.ProbeAnswer{At: after, Good: true})
	if open.ProbeDue(r, after.Add(4*time.Second)) || !open.ProbeDue(r, after.Add(5*time.Second)) {
		t.Error("the probe is not called every 5 s")
	}
	if open.ProbeTries(r, after) {
		t.Error("one good answer started the trial; want two in a row")
	}
	r = r.Heard(4, circuit.ProbeAnswer{At: after.Add(5 * time.Second), Good: false})
	r = r.Heard(4, circuit.ProbeAnswer{At: after.Add(10 * time.Second), Good: true})
	if open.ProbeTries(r, after) {
		t.Error("good, bad, good started the trial; want two good in a row")
	}
	r = r.Heard(4, circuit.ProbeAnswer{At: after.Add(15 * time.Second), Good: true})
	if !open.ProbeTries(r, after) {
		t.Errorf("two good answers in a row did not start the trial: %+v", r)
	}
	if next := r.Heard(5, circuit.ProbeAnswer{Good: true}); next.InARow != 1 || len(next.Answers) != 1 {
		t.Errorf("a new episode's answer kept the last episode's: %+v", next)
	}

	forced := open
	forced.State, forced.Policy = circuit.ForcedOpen, circuit.Policy{}
	if w := forced.ProbeWaits(none, after); w != "" {
		t.Errorf("a forced-open circuit's probe waits for %q with no alert resolved", w)
	}
	resolved := circuit.ProbeRecord{Episode: 4, Resolved: true, Reason: "alert rule inventory-dtu resolved"}
	if w := forced.ProbeWaits(resolved, after); w != "alert rule inventory-dtu resolved" {
		t.Errorf("after its alert resolved the probe waits for %q", w)
	}
	resolved.Episode = 3
	if w := forced.ProbeWaits(resolved, after); w != "" {
		t.Errorf("an earlier episode's resolved alert made the probe wait for %q", w)
	}
}
