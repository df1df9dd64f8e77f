package fleet_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
)

// Each trigger kind's binding as the extensions declare it, read into the
// kind and the details a circuit, host insight or a job needs.
func TestParseTriggerReadsEachKind(t *testing.T) {
	settings := fleet.Settings{"OrdersHub": "orders", "Nightly": "0 0 2 * * *"}
	cases := []struct {
		name, config, kind string
		want               map[string]string // detail → value ("" with setting s: "=s")
	}{
		{"event hubs", `{"bindings":[{"type":"eventHubTrigger","name":"events","direction":"in","eventHubName":"%OrdersHub%","consumerGroup":"$Default","connection":"EventHubConnection","cardinality":"many"}]}`,
			fleet.EventHubs, map[string]string{"eventHubName": "orders", "consumerGroup": "$Default", "connection": "=EventHubConnection"}},
		{"event hubs, extension 2.x path", `{"bindings":[{"type":"EventHubTrigger","path":"legacy","connection":"EH"}]}`,
			fleet.EventHubs, map[string]string{"eventHubName": "legacy", "connection": "=EH"}},
		{"service bus topic", `{"bindings":[{"type":"serviceBusTrigger","topicName":"t","subscriptionName":"s","connection":"SB","isSessionsEnabled":true}]}`,
			fleet.ServiceBus, map[string]string{"topicName": "t", "subscriptionName": "s", "connection": "=SB", "isSessionsEnabled": "true"}},
		{"storage queue", `{"bindings":[{"type":"queueTrigger","queueName":"work","connection":"AzureWebJobsStorage"},{"type":"blob","direction":"out","path":"x/{id}"}]}`,
			fleet.Queue, map[string]string{"queueName": "work", "connection": "=AzureWebJobsStorage"}},
		{"cosmos db 3.x names", `{"bindings":[{"type":"cosmosDBTrigger","databaseName":"db","collectionName":"items","connectionStringSetting":"Cosmos","leaseCollectionName":"leases"}]}`,
			fleet.CosmosDB, map[string]string{"databaseName": "db", "containerName": "items", "leaseContainerName": "leases", "connection": "=Cosmos"}},
		{"kafka", `{"bindings":[{"type":"kafkaTrigger","topic":"clicks","consumerGroup":"g","brokerList":"%Brokers%"}]}`,
			fleet.Kafka, map[string]string{"topic": "clicks", "consumerGroup": "g", "brokerList": "=Brokers"}},
		{"timer from a setting", `{"bindings":[{"type":"timerTrigger","schedule":"%Nightly%","name":"t"}]}`,
			fleet.Timer, map[string]string{"schedule": "0 0 2 * * *"}},
		{"http", `{"bindings":[{"type":"httpTrigger","authLevel":"function","methods":["get","post"]},{"type":"http","direction":"out"}]}`,
			fleet.HTTP, map[string]string{"methods": "get, post", "authLevel": "function"}},
		{"unknown kind keeps its name", `{"bindings":[{"type":"rabbitMQTrigger","queueName":"q"}]}`, "rabbitMQTrigger", map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := fleet.ParseTrigger([]byte(tc.config), settings, "")
			if err != nil {
				t.Fatal(err)
			}
			if tr.Kind != tc.kind {
				t.Errorf("kind %q, want %q", tr.Kind, tc.kind)
			}
			if len(tr.Details) != len(tc.want) {
				t.Errorf("details %+v, want %d of them", tr.Details, len(tc.want))
			}
			for name, want := range tc.want {
				d, ok := tr.Get(name)
				got := d.Value
				if d.Setting != "" && d.Value == "" {
					got = "=" + d.Setting
				}
				if !ok || got != want {
					t.Errorf("%s = %q (%+v), want %q", name, got, d, want)
				}
			}
		})
	}
}

// A %Setting% Fusebox cannot resolve says why, and a connection's setting
// is named, never read: its value may be a secret.
func TestParseTriggerSaysWhatItCannotResolve(t *testing.T) {
	cfg := []byte(`{"bindings":[{"type":"eventHubTrigger","eventHubName":"%Hub%","connection":"%EH%"}]}`)
	tr, err := fleet.ParseTrigger(cfg, nil, "listing settings needs Microsoft.Web/sites/config/list/action")
	if err != nil {
		t.Fatal(err)
	}
	hub, _ := tr.Get("eventHubName")
	if hub.Value != "" || hub.Setting != "Hub" || !strings.Contains(hub.Unresolved, "config/list/action") {
		t.Errorf("unread settings: %+v", hub)
	}
	tr, _ = fleet.ParseTrigger(cfg, fleet.Settings{"EH": "Endpoint=sb://x;SharedAccessKey=secret"}, "")
	hub, _ = tr.Get("eventHubName")
	if hub.Unresolved != "the app has no setting Hub" {
		t.Errorf("missing setting: %+v", hub)
	}
	conn, _ := tr.Get("connection")
	if conn.Value != "" || strings.Contains(conn.Setting+conn.Unresolved, "secret") {
		t.Errorf("the connection's value was read: %+v", conn)
	}
}

// A config that is not a function's, too large, or without a trigger is
// refused with a reason; none of it panics or is kept.
func TestParseTriggerRefusesBadConfig(t *testing.T) {
	many := `{"bindings":[` + strings.Repeat(`{"type":"blob"},`, 70) + `{"type":"queueTrigger"}]}`
	for name, cfg := range map[string]string{
		"not json":   `{"bindings":`,
		"too large":  `{"bindings":[{"type":"queueTrigger","queueName":"` + strings.Repeat("q", 70<<10) + `"}]}`,
		"too many":   many,
		"no trigger": `{"bindings":[{"type":"blob","direction":"in"}]}`,
	} {
		if _, err := fleet.ParseTrigger([]byte(cfg), nil, ""); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "no trigger" && !errors.Is(err, fleet.ErrNoTrigger) {
			t.Errorf("no trigger: %v", err)
		}
	}
	long := `{"bindings":[{"type":"queueTrigger","queueName":"` + strings.Repeat("q", 600) + `"}]}`
	tr, err := fleet.ParseTrigger([]byte(long), nil, "")
	if d, _ := tr.Get("queueName"); err != nil || d.Value != "" || d.Unresolved == "" {
		t.Errorf("a 600-character queue name: %+v, %v", d, err)
	}
}

// A site is guarded when a registered app names it, whatever the case ARM
// or the operator wrote it in; the rest are counted as unguarded.
func TestMarkGuardedMatchesRegisteredApps(t *testing.T) {
	s := fleet.Survey{Sites: []fleet.Site{
		{Subscription: "SUB", ResourceGroup: "rg", Name: "Orders"},
		{Subscription: "sub", ResourceGroup: "rg", Name: "billing"},
		{Subscription: "sub", ResourceGroup: "other", Name: "orders"},
	}}
	s.MarkGuarded([]circuit.App{{SubscriptionID: "sub", ResourceGroup: "RG", Site: "orders", Slot: "staging"}})
	if !s.Sites[0].Guarded || s.Sites[1].Guarded || s.Sites[2].Guarded {
		t.Errorf("guarded: %+v", s.Sites)
	}
	if s.Unguarded() != 2 {
		t.Errorf("unguarded %d, want 2", s.Unguarded())
	}
}
