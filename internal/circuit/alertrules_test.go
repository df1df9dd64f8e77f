package circuit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

const rule = "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-data/providers/microsoft.insights/metricAlerts/db-dtu"

// A circuit names alert rules by resource id, compared in any case; a
// form or API naming something else is refused by field, and a stored row
// naming one costs only that rule.
func TestAlertRules(t *testing.T) {
	app := &circuit.App{ID: "orders", Switch: circuit.SwitchLocal}
	base := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 10, Window: time.Minute}}
	ok := base
	ok.AlertRules = []string{rule}
	if err := ok.Validate(app); err != nil {
		t.Fatal(err)
	}
	if !ok.NamesAlertRule(strings.ToUpper(rule)) || ok.NamesAlertRule(rule+"-other") {
		t.Error("rule ids are not compared as resource ids are")
	}
	for _, bad := range [][]string{{"inventory-db-dtu-high"}, {"https://example.com" + rule}, {rule + " x"}, make([]string, circuit.MaxAlertRules+1)} {
		c := base
		c.AlertRules = bad
		if err := c.Validate(app); err == nil || !strings.Contains(err.Error(), "alert_rules") {
			t.Errorf("%q: %v, want a refusal of alert_rules", bad, err)
		}
	}
	spec := base.Settings.Spec()
	spec.AlertRules = []string{"not-a-rule", rule}
	set, err := spec.Stored()
	if err != nil || len(set.AlertRules) != 1 || set.AlertRules[0] != rule {
		t.Errorf("a stored row naming a bad rule: %v %v; want it kept, without that rule", set.AlertRules, err)
	}
}

// A trial switches an open trigger on, half-open, for the circuit's own
// counts to judge; a closed circuit has nothing to try.
func TestATrialIsOnlyOfATriggerOff(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, State: circuit.ForcedOpen, Episode: 4}
	next, f, err := circuit.Trial(c, "Azure Monitor", "alert rule db resolved", circuit.Counts{}, now)
	if err != nil || next.State != circuit.HalfOpen || f.Actor != "Azure Monitor" || next.Episode != 5 || f.From != circuit.ForcedOpen {
		t.Errorf("a trial of a tripped circuit: %s, flip %+v, %v", next.State, f, err)
	}
	c.State = circuit.Closed
	if _, _, err := circuit.Trial(c, "Azure Monitor", "x", circuit.Counts{}, now); err != circuit.ErrNoTrial {
		t.Errorf("a trial of a closed circuit: %v", err)
	}
}

// A pause is a trip by hand that the evaluator resumes when it ends; a
// resume by hand before then ends it early, and nothing resumes it again.
func TestAPauseEndsOnItsOwn(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, State: circuit.Closed, Episode: 1}
	if _, _, err := circuit.Pause(c, "olivia", "maintenance", now.Add(-time.Minute), circuit.Counts{}, now); err != circuit.ErrPause {
		t.Errorf("a pause ending in the past: %v", err)
	}
	if _, _, err := circuit.Pause(c, "olivia", "maintenance", now.Add(8*24*time.Hour), circuit.Counts{}, now); err != circuit.ErrPause {
		t.Errorf("a pause of 8 days: %v", err)
	}
	p, f, err := circuit.Pause(c, "olivia", "database maintenance", now.Add(time.Hour), circuit.Counts{}, now)
	if err != nil || p.State != circuit.ForcedOpen || !p.PauseUntil.Equal(now.Add(time.Hour)) || !strings.Contains(f.Reason, "database maintenance, until 2026-12-07 03:00 UTC") {
		t.Fatalf("a pause of an hour: %s until %s, %q, %v", p.State, p.PauseUntil, f.Reason, err)
	}
	if _, fl := circuit.Evaluate(p, circuit.Counts{}, now.Add(2*time.Hour)); fl != nil {
		t.Errorf("a pause whose trigger is not yet off was resumed: %+v", fl)
	}
	p.AppliedEpisode = p.Episode // the switch applied it
	if next, fl := circuit.Evaluate(p, circuit.Counts{}, now.Add(59*time.Minute)); fl != nil || next.State != circuit.ForcedOpen {
		t.Errorf("before its end the pause changed to %s", next.State)
	}
	next, fl := circuit.Evaluate(p, circuit.Counts{}, now.Add(time.Hour))
	if fl == nil || next.State != circuit.Closed || fl.Actor != circuit.EvaluatorActor || fl.Reason != "the pause ended" || !next.PauseUntil.IsZero() {
		t.Errorf("at its end: %s, flip %+v", next.State, fl)
	}
	early, _, err := circuit.Resume(p, "olivia", "done early", circuit.Counts{}, now.Add(10*time.Minute))
	if err != nil || !early.PauseUntil.IsZero() {
		t.Fatalf("resumed early: %v, pause until %s", err, early.PauseUntil)
	}
	if _, fl := circuit.Evaluate(early, circuit.Counts{}, now.Add(2*time.Hour)); fl != nil {
		t.Errorf("a pause resumed early was resumed again: %+v", fl)
	}
}
