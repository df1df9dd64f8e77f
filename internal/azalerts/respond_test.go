package azalerts_test

import (
	"context"
	"slices"
	"strings"
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
		Flip: func(_ context.Context, app, fn, _, _ string, a circuit.Action) (circuit.Circuit, error) {
			switch a.Verb {
			case circuit.VerbTrip:
				tripped = append(tripped, app+"/"+fn)
			case circuit.VerbThrottle:
				throttled = append(throttled, app+"/"+fn)
			}
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
	out, err := r.Respond(t.Context(), azalerts.Alert{RuleID: dbRule, Rule: "db-dtu", Condition: azalerts.Fired})
	if err != nil {
		t.Fatal(err)
	}
	acted := out.Acted
	if out.Rule != dbRule || out.Note != "matched by its rule id (alertRuleID)" {
		t.Errorf("matched %q, saying %q; want its alertRuleID", out.Rule, out.Note)
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

// Azure's published samples carry no alertRuleID, as Azure sends them: the
// metric alert trips the circuit naming its rule by name in its
// subscription and resource group (and not one of that name in another
// group); the activity log alert, fitting two rules of its name in its
// subscription, trips neither and says so; the common schema's Resolved
// sample, whose alertId names no subscription, puts on trial the circuit
// its rule's Fired tripped. Each is read as published.
func TestThePublishedSamplesActOnTheRuleTheyName(t *testing.T) {
	const sub = "/subscriptions/11111111-1111-1111-1111-111111111111"
	metricRule := sub + "/resourceGroups/test-rg/providers/Microsoft.Insights/metricAlerts/test-metricAlertRule" // as a person spelled it
	activityRule := sub + "/resourceGroups/test-RG/providers/microsoft.insights/activityLogAlerts/test-activityLogAlertRule"
	wcus := "/subscriptions/3f2d4487-b0fc-4125-8bd5-7ad17384221e/resourceGroups/PipeLineAlertRG/providers/microsoft.insights/metricAlerts/WCUS-R2-Gen2"
	closed := func(app, fn string, rules ...string) circuit.Circuit {
		return circuit.Circuit{AppID: app, Function: fn, State: circuit.Closed, Settings: withSettings(circuit.Settings{Threshold: 10}, rules...)}
	}
	offByWCUS := closed("vm", "Render", wcus)
	offByWCUS.State, offByWCUS.Reason = circuit.ForcedOpen, "alert rule WCUS-R2-Gen2 fired"
	for _, tc := range []struct {
		file           string
		circuits       []circuit.Circuit
		acted          []string
		rule, says     string
		tripped, tried []string
	}{
		{"test-action-metric-static.json", []circuit.Circuit{
			closed("storage", "Ingest", metricRule),
			closed("storage", "Elsewhere", strings.Replace(metricRule, "test-rg", "other-rg", 1)),
		}, []string{"storage/Ingest"}, metricRule, "carries no rule id: matched", []string{"storage/Ingest"}, nil},
		{"test-action-activity-log-administrative.json", []circuit.Circuit{
			closed("vm", "Restart", activityRule),
			closed("vm", "Other", strings.Replace(activityRule, "test-RG", "other-RG", 1)),
		}, nil, "", "matches more than one rule: ", nil, nil},
		{"alerts-common-schema-sample.json", []circuit.Circuit{offByWCUS}, []string{"vm/Render"}, wcus, "carries no rule id: matched", nil, []string{"vm/Render"}},
	} {
		var tripped, tried []string
		r := azalerts.Responder{
			Circuits: func(context.Context) ([]circuit.Circuit, error) { return tc.circuits, nil },
			Flip: func(_ context.Context, app, fn, _, _ string, a circuit.Action) (circuit.Circuit, error) {
				switch a.Verb {
				case circuit.VerbTrip:
					tripped = append(tripped, app+"/"+fn)
				case circuit.VerbTrial:
					tried = append(tried, app+"/"+fn)
				}
				return circuit.Circuit{}, nil
			},
		}
		out, err := r.Respond(t.Context(), published(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !slices.Equal(out.Acted, tc.acted) || out.Rule != tc.rule || !strings.HasPrefix(out.Note, tc.says) {
			t.Errorf("%s: acted on %v as %q saying %q; want %v as %q saying %q…", tc.file, out.Acted, out.Rule, out.Note, tc.acted, tc.rule, tc.says)
		}
		if !slices.Equal(tripped, tc.tripped) || !slices.Equal(tried, tc.tried) {
			t.Errorf("%s: tripped %v, tried %v; want %v, %v", tc.file, tripped, tried, tc.tripped, tc.tried)
		}
	}
}
