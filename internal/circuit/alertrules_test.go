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
