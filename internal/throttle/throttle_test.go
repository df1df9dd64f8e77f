package throttle_test

import (
	"maps"
	"testing"

	"github.com/fusebox/fusebox/internal/throttle"
)

// Each trigger kind's plan at a quarter: what was set is lowered to a
// quarter of it, what was absent to a quarter of its smallest default, and
// every option keeps its floor and ceiling.
func TestLoweringPlansEachTriggersOwnOptions(t *testing.T) {
	fns := map[string][]string{throttle.EventHubs: {"ProcessOrders", "Audit"}, throttle.ServiceBus: {"Bill"}, throttle.Queue: {"TakeOrders", "Mail"}}
	for _, tc := range []struct {
		name     string
		kind     string
		function string
		settings map[string]string
		cores    int
		want     string
	}{
		{"event hubs, nothing set", throttle.EventHubs, "ProcessOrders", nil, 0,
			throttle.EventHubMaxBatch + ": absent → 2\n" + throttle.EventHubPrefetch + ": absent → 75\nalso applies to Audit"},
		{"event hubs, set, with a minimum batch above the new maximum", throttle.EventHubs, "ProcessOrders",
			map[string]string{throttle.EventHubMaxBatch: "100", throttle.EventHubMinBatch: "50", throttle.EventHubPrefetch: "0"}, 0,
			throttle.EventHubMaxBatch + ": 100 → 25\n" + throttle.EventHubPrefetch + ": 0 → 75\n" + throttle.EventHubMinBatch + ": 50 → 25\nalso applies to Audit"},
		{"service bus, 4 cores, no sessions", throttle.ServiceBus, "Bill", nil, 4,
			throttle.ServiceBusCalls + ": absent → 16"},
		{"service bus, sessions set", throttle.ServiceBus, "Bill", map[string]string{throttle.ServiceBusCalls: "32", throttle.ServiceBusSessions: "8"}, 0,
			throttle.ServiceBusCalls + ": 32 → 8\n" + throttle.ServiceBusSessions + ": 8 → 2"},
		{"queues, a batch of one stays one", throttle.Queue, "TakeOrders", map[string]string{throttle.QueueBatch: "1"}, 0,
			throttle.QueueBatch + ": 1 → 1\n" + throttle.QueueThreshold + ": absent → 2\nalso applies to Mail"},
		{"queues, an unreadable value counts as the default", throttle.Queue, "TakeOrders", map[string]string{throttle.QueueBatch: "lots"}, 0,
			throttle.QueueBatch + ": lots → 4\n" + throttle.QueueThreshold + ": absent → 2\nalso applies to Mail"},
		{"queues under dynamic concurrency", throttle.Queue, "TakeOrders", map[string]string{throttle.Dynamic: "True", throttle.QueueBatch: "16"}, 0,
			throttle.MaxConcurrency + ": absent → 125\nalso applies to Bill, Mail\ndynamic concurrency is on: the host ignores the trigger's own limits and learns each function's concurrency up to maximumFunctionConcurrency, which this lowers for every function it governs"},
		{"event hubs are not governed by dynamic concurrency", throttle.EventHubs, "Audit", map[string]string{throttle.Dynamic: "true"}, 0,
			throttle.EventHubMaxBatch + ": absent → 2\n" + throttle.EventHubPrefetch + ": absent → 75\nalso applies to ProcessOrders"},
		{"a kind with no option", "cosmosDB", "Sync", nil, 0,
			"No setting to change: a cosmosDB trigger has no concurrency option Fusebox knows: only tripping stops it."},
	} {
		p := throttle.Lower(throttle.App{Settings: tc.settings, Cores: tc.cores, Functions: fns}, tc.function, tc.kind, 0.25)
		if got := p.Text(); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// A throttle undone puts back exactly what was there: values as they were,
// settings that were absent removed, the app's other settings untouched.
func TestRestoringPutsBackExactlyWhatWasThere(t *testing.T) {
	for _, settings := range []map[string]string{
		nil,
		{throttle.EventHubMaxBatch: "64", "OrdersHub": "orders"},
		{throttle.EventHubMaxBatch: "64", throttle.EventHubMinBatch: "40", throttle.EventHubPrefetch: "512", "OrdersHub": "orders"},
	} {
		app := throttle.App{Settings: settings}
		low := throttle.Lower(app, "ProcessOrders", throttle.EventHubs, 0.25)
		throttled := low.Apply(settings)
		if maps.Equal(throttled, settings) {
			t.Fatalf("%v: lowering changed nothing", settings)
		}
		// A ramp holds each share of what was there before in turn.
		for _, share := range throttle.Ramp {
			step := throttle.Lower(app, "ProcessOrders", throttle.EventHubs, share)
			if settings[throttle.EventHubMaxBatch] == "64" && step.Changes[0].Now != map[float64]string{0.25: "16", 0.5: "32"}[share] {
				t.Errorf("ramp step %v: maxEventBatchSize %s, want %v of 64", share, step.Changes[0].Now, share)
			}
		}
		back := throttle.Restore(low).Apply(throttled)
		if settings == nil {
			settings = map[string]string{}
		}
		if !maps.Equal(back, settings) {
			t.Errorf("restored %v, want exactly %v", back, settings)
		}
	}
}

// A share outside (0, 1) plans nothing.
func TestAShareOutsideZeroAndOnePlansNothing(t *testing.T) {
	for _, share := range []float64{0, 1, 1.5, -0.25} {
		if p := throttle.Lower(throttle.App{}, "F", throttle.Queue, share); !p.Empty() {
			t.Errorf("share %v planned %s", share, p.Text())
		}
	}
}
