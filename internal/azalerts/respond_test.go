package azalerts_test

import (
	"context"
	"slices"
	"testing"

	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
)

const dbRule = "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-data/providers/microsoft.insights/metricAlerts/db-dtu"

// keeper records what the responder asked of downstreams.
type keeper struct{ calls []string }

func (k *keeper) Trip(_ context.Context, name, _, _ string) (downstream.Downstream, []downstream.Outcome, error) {
	k.calls = append(k.calls, "trip "+name)
	return downstream.Downstream{Name: name}, []downstream.Outcome{{Member: "orders/Process"}}, nil
}

func (k *keeper) Throttle(_ context.Context, name, _, _ string) (downstream.Downstream, []downstream.Outcome, error) {
	k.calls = append(k.calls, "throttle "+name)
	return downstream.Downstream{Name: name}, nil, nil
}

func (k *keeper) Resolved(_ context.Context, name, _, _ string) (downstream.Downstream, []downstream.Outcome, error) {
	k.calls = append(k.calls, "resolved "+name)
	return downstream.Downstream{Name: name}, nil, nil
}

func (k *keeper) WaitForProbe(_ context.Context, c circuit.Circuit, _ string) error {
	k.calls = append(k.calls, "wait for the probe of "+c.ID())
	return nil
}

// A rule a circuit names with "throttle:" throttles it (when it has a
// throttle stage) instead of tripping it; a downstream naming the rule
// acts first, and a member it switched off is not tripped again on its own
// rule; a rule a downstream names "throttle" throttles its members.
func TestWhatEachRuleDoes(t *testing.T) {
	withThrottle := circuit.Settings{Threshold: 10, Throttle: circuit.Throttle{Threshold: 5}}
	cs := []circuit.Circuit{
		{AppID: "orders", Function: "Process", State: circuit.ForcedOpen, Downstream: "inventory-db#1", Settings: circuit.Settings{AlertRules: []string{dbRule}}},
		{AppID: "orders", Function: "Take", State: circuit.Closed, Settings: withSettings(withThrottle, "throttle:"+dbRule)},
		{AppID: "orders", Function: "Send", State: circuit.Closed, Settings: withSettings(circuit.Settings{Threshold: 10}, "throttle:"+dbRule)},
		{AppID: "billing", Function: "Charge", State: circuit.Closed, Settings: withSettings(circuit.Settings{Threshold: 10}, dbRule)},
	}
	var tripped, throttled []string
	k := &keeper{}
	r := azalerts.Responder{
		Circuits: func(context.Context) ([]circuit.Circuit, error) { return cs, nil },
		Trip: func(_ context.Context, app, fn, _, _ string) (circuit.Circuit, error) {
			tripped = append(tripped, app+"/"+fn)
			return circuit.Circuit{}, nil
		},
		Throttle: func(_ context.Context, app, fn, _, _, _ string) (circuit.Circuit, error) {
			throttled = append(throttled, app+"/"+fn)
			return circuit.Circuit{}, nil
		},
		Downstreams: func(context.Context) ([]downstream.Downstream, error) {
			return []downstream.Downstream{
				{Name: "inventory-db", Members: []string{"orders/Process"}, Rules: []downstream.Rule{{ID: dbRule, Action: downstream.ActionTrip}}},
				{Name: "search", Members: []string{"orders/Search"}, Rules: []downstream.Rule{{ID: dbRule, Action: downstream.ActionThrottle}}},
				{Name: "other", Members: []string{"orders/Other"}},
			}, nil
		},
		Keeper: k,
	}
	acted, err := r.Respond(t.Context(), azalerts.Alert{RuleID: dbRule, Rule: "db-dtu", Condition: azalerts.Fired})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k.calls, []string{"trip inventory-db", "throttle search"}) {
		t.Errorf("asked of downstreams: %v", k.calls)
	}
	if !slices.Equal(tripped, []string{"billing/Charge"}) || !slices.Equal(throttled, []string{"orders/Take"}) {
		t.Errorf("tripped %v, throttled %v; want Charge tripped and Take throttled (Send has no throttle stage, Process is the downstream's)", tripped, throttled)
	}
	if want := []string{"downstream:inventory-db", "orders/Process", "downstream:search", "billing/Charge", "orders/Take"}; !slices.Equal(acted, want) {
		t.Errorf("acted on %v, want %v", acted, want)
	}
}

func withSettings(s circuit.Settings, rules ...string) circuit.Settings {
	s.AlertRules = rules
	return s
}
