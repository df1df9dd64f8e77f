package circuit_test

import (
	"testing"

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
