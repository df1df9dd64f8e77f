package circuit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

func TestAnEscalationNamesWhoAndWhenTogether(t *testing.T) {
	app := &circuit.App{ID: "orders"}
	many := make([]string, circuit.MaxEscalateTo+1)
	for i := range many {
		many[i] = "ops"
	}
	for _, tc := range []struct {
		name  string
		e     circuit.Escalation
		field string
		says  string
	}{
		{"none", circuit.Escalation{}, "", ""},
		{"an address and a channel", circuit.Escalation{After: 30 * time.Minute, To: []string{"lead@example.com", "ops-pager"}}, "", ""},
		{"who without when", circuit.Escalation{To: []string{"lead@example.com"}}, "escalate_after", "such as 30m"},
		{"when without who", circuit.Escalation{After: time.Hour}, "escalate_to", "must name someone"},
		{"too soon", circuit.Escalation{After: time.Millisecond, To: []string{"ops"}}, "escalate_after", "at least 1s"},
		{"too late", circuit.Escalation{After: 8 * 24 * time.Hour, To: []string{"ops"}}, "escalate_after", "at most 168h"},
		{"not whole seconds", circuit.Escalation{After: 1500 * time.Millisecond, To: []string{"ops"}}, "escalate_after", "whole seconds"},
		{"a bad address", circuit.Escalation{After: time.Hour, To: []string{"Lead <lead@example.com>"}}, "escalate_to", "is not an e-mail address"},
		{"neither", circuit.Escalation{After: time.Hour, To: []string{"Ops Pager"}}, "escalate_to", "neither an e-mail address nor a channel id"},
		{"too many", circuit.Escalation{After: time.Hour, To: many}, "escalate_to", "at most 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Threshold: 1, Window: time.Minute, Escalate: tc.e}}
			err := c.Validate(app)
			var v circuit.ValidationError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field == "":
			case !errors.As(err, &v) || !strings.Contains(v.For(tc.field), tc.says):
				t.Errorf("%s: %v; want it to say %q", tc.field, err, tc.says)
			}
		})
	}
}

// A hub's retention is whole hours up to Event Hubs' 90 days, and only
// beside the hub it belongs to.
func TestAHubRetentionIsWholeHoursOfANamedHub(t *testing.T) {
	app := &circuit.App{ID: "orders"}
	for _, tc := range []struct {
		name string
		hub  string
		keep time.Duration
		says string
	}{
		{"unknown", "orders", 0, ""},
		{"a day", "orders", 24 * time.Hour, ""},
		{"90 days", "orders", 90 * 24 * time.Hour, ""},
		{"91 days", "orders", 91 * 24 * time.Hour, "at most 90 days"},
		{"negative", "orders", -time.Hour, "at most 90 days"},
		{"half an hour", "orders", 30 * time.Minute, "whole hours"},
		{"no hub", "", 24 * time.Hour, "needs the event hub"},
	} {
		c := circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Threshold: 1, Window: time.Minute, EventHub: tc.hub, HubRetention: tc.keep}}
		err := c.Validate(app)
		var v circuit.ValidationError
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.says == "":
		case !errors.As(err, &v) || !strings.Contains(v.For("event_hub_retention"), tc.says):
			t.Errorf("%s: %v; want event_hub_retention to say %q", tc.name, err, tc.says)
		}
	}
}
