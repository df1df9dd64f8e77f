package circuit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

func TestConsumesNamesTheHubsCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		setting             string
		namespace, hub, grp string
		want                bool
	}{
		{"orders", "a.servicebus.windows.net", "orders", "$default", true},
		{"Orders/$Default", "a.servicebus.windows.net", "orders", "$default", true},
		{"orders/billing", "a.servicebus.windows.net", "orders", "$default", false},
		{"a.servicebus.windows.net/orders/$default", "a.servicebus.windows.net", "orders", "$default", true},
		{"a.servicebus.windows.net/orders/$default", "b.servicebus.windows.net", "orders", "$default", false},
		{"refunds", "a.servicebus.windows.net", "orders", "$default", false},
	} {
		c := circuit.Circuit{Settings: circuit.Settings{EventHub: tc.setting}}
		if got := c.Consumes().Matches(tc.namespace, tc.hub, tc.grp); got != tc.want {
			t.Errorf("%q matches %s/%s/%s = %v, want %v", tc.setting, tc.namespace, tc.hub, tc.grp, got, tc.want)
		}
	}
}

// Which way back a resume page offers first: the circuit's choice, else
// its app's, else from before the first failure, which loses nothing. A
// choice that names neither way is refused where people type it and
// dropped where a stored document spells it.
func TestTheWayBackOfferedFirst(t *testing.T) {
	for _, tc := range []struct{ circuit, app, want string }{
		{"", "", circuit.ResumeFromFirstFailure},
		{"", circuit.ResumeFromCheckpoint, circuit.ResumeFromCheckpoint},
		{circuit.ResumeFromFirstFailure, circuit.ResumeFromCheckpoint, circuit.ResumeFromFirstFailure},
		{circuit.ResumeFromCheckpoint, "", circuit.ResumeFromCheckpoint},
	} {
		c := circuit.Circuit{Settings: circuit.Settings{ResumeFrom: tc.circuit}}
		if got := circuit.OffersFirst(c, circuit.App{ResumeFrom: tc.app}); got != tc.want {
			t.Errorf("circuit %q, app %q: offers %q first, want %q", tc.circuit, tc.app, got, tc.want)
		}
	}
	bad := circuit.Circuit{AppID: "orders", Function: "F", Settings: circuit.Settings{Threshold: 1, Window: time.Second, ResumeFrom: "rewind"}}
	var v circuit.ValidationError
	if err := bad.Validate(&circuit.App{ID: "orders"}); !errors.As(err, &v) || v.For("resume_from") == "" {
		t.Errorf("a circuit's resume_from of %q: %v; want it named", bad.ResumeFrom, err)
	}
	if set, err := bad.Spec().Stored(); err != nil || set.ResumeFrom != "" {
		t.Errorf("a stored circuit whose resume_from is %q: %+v, %v; want it read, choosing nothing", bad.ResumeFrom, set.ResumeFrom, err)
	}
	if err := (circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: "x.json", ResumeFrom: "rewind"}).Validate(); err == nil || !strings.Contains(err.Error(), "resume_from") {
		t.Errorf("an app's resume_from of %q: %v; want it named", "rewind", err)
	}
}
