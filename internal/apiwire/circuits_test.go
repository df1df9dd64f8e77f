package apiwire_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/circuit"
)

// Settings sent through the API's JSON come back as they were, whether
// read from what a create sends or from what a GET answers (as fusebox
// export reads them): no setting is lost on the wire.
func TestSettingsSurviveTheWire(t *testing.T) {
	s := circuit.Settings{Threshold: 100, Window: 30 * time.Second, Rule: circuit.Rule{Ratio: 0.5, MinCalls: 200, NoSuccess: true, MinInstances: 2},
		Recipients: []string{"ops@example.com"}, Channels: []string{"oncall"}, Escalate: circuit.Escalation{To: []string{"lead@example.com"}, After: 30 * time.Minute},
		EventHub: "orders/fusebox", HubRetention: 24 * time.Hour, Queue: "orders", Parking: "orders-parked",
		Policy:   circuit.Policy{AutoResume: true, Cooldown: time.Minute, MaxCooldown: time.Hour},
		Throttle: circuit.Throttle{Threshold: 20, Quiet: 5 * time.Minute, Kind: "queue", Ask: true, OnlyThrottling: true, Words: []string{"quotaexceeded"}},
		Shadow:   true, Runbook: circuit.Runbook{URL: "https://wiki.example.com/orders", Note: "Check the database first"}}
	sent := apiwire.NewCircuitSettings("orders", "Process", s)
	raw, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	var got apiwire.CircuitSettings
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if back := got.Settings(); !reflect.DeepEqual(back, s) {
		t.Errorf("sent and read back:\n%+v\nwant\n%+v", back, s)
	}
	// What a GET answers, read back as export reads it.
	raw, err = json.Marshal(apiwire.Circuit{Spec: s.Spec(), App: "orders", Function: "Process", State: "closed",
		Throttle: &apiwire.Throttle{Threshold: 1, QuietSeconds: 1, Kind: "other"}}) // the state's copy is not what is read
	if err != nil {
		t.Fatal(err)
	}
	var answer apiwire.Circuit
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatal(err)
	}
	if back := answer.Settings(); !reflect.DeepEqual(back, s) {
		t.Errorf("answered and read back:\n%+v\nwant\n%+v", back, s)
	}
}

// A duration too large for Go's time.Duration is refused, not wrapped
// round to a small or negative one.
func TestAnOverflowingDurationIsRefused(t *testing.T) {
	for _, body := range []string{`{"window_seconds": 9300000000000}`, `{"event_hub_retention_hours": 2600000}`, `{"cooldown_seconds": 1.5}`} {
		var got apiwire.CircuitSettings
		if err := json.Unmarshal([]byte(body), &got); err == nil {
			t.Errorf("%s read as %v, want an error", body, got.Settings())
		}
	}
}
