package fleet

import (
	"strings"
	"testing"
)

func fn(name, kind string, details ...Detail) Function {
	return Function{Name: name, Trigger: Trigger{Kind: kind, Type: kind + "Trigger", Details: details}}
}

// TestProposeByTriggerKind: the triggers that move past failures trip
// early on a count, those that retry and set aside on a share; timers get
// jobs, HTTP and unknown kinds nothing, each with why.
func TestProposeByTriggerKind(t *testing.T) {
	site := Site{Subscription: "s", ResourceGroup: "rg", Name: "Func_Orders.EU"}
	fns := []Function{
		fn("Hubs", EventHubs, Detail{Name: "eventHubName", Value: "orders"}, Detail{Name: "consumerGroup", Value: "$Default"}, Detail{Name: "connection", Setting: "Hub"}),
		fn("Feed", CosmosDB), fn("Stream", Kafka), fn("Bus", ServiceBus), fn("Files", Blob),
		fn("Q", Queue, Detail{Name: "queueName", Value: "work"}),
		fn("Tick", Timer, Detail{Name: "schedule", Value: "0 */5 * * * *"}),
		fn("Broken", Timer, Detail{Name: "schedule", Setting: "Sched", Unresolved: "the app has no setting Sched"}),
		fn("Web", HTTP), fn("Sql", "sqlTrigger"), {Name: "Odd", Problem: "its config could not be read"},
	}
	keyed := Settings{"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=k==;EndpointSuffix=core.windows.net", "Hub": "Endpoint=sb://x/;SharedAccessKey=k"}
	p := Propose(site, "", fns, keyed, "blob.core.windows.net")
	if p.App.ID != "func-orders-eu" {
		t.Errorf("app id %q", p.App.ID)
	}
	count := map[string]bool{}
	for _, c := range p.Circuits {
		count[c.Function] = c.Settings.Rule.Ratio == 0 && c.Settings.Threshold == MovesOnDefaults.Threshold
	}
	for f, early := range map[string]bool{"Hubs": true, "Feed": true, "Stream": true, "Bus": false, "Files": false, "Q": false} {
		if got, ok := count[f]; !ok || got != early {
			t.Errorf("%s: proposed %v, count rule %v; want count rule %v", f, ok, got, early)
		}
	}
	if p.Circuits[0].Settings.EventHub != "orders" || p.Circuits[len(p.Circuits)-1].Settings.Queue != "work" {
		t.Errorf("hub or queue not taken from the bindings: %+v", p.Circuits)
	}
	if len(p.Jobs) != 1 || p.Jobs[0].Schedule != "0 */5 * * * *" || p.Jobs[0].TimeZone != "" {
		t.Errorf("jobs %+v", p.Jobs)
	}
	left := map[string]string{}
	for _, l := range p.Left {
		left[l.Function] = l.Why
	}
	for f, want := range map[string]string{"Broken": "no setting Sched", "Web": "HTTP", "Sql": "sqlTrigger", "Odd": "could not be read"} {
		if !strings.Contains(left[f], want) {
			t.Errorf("%s left for %q, want it to say %q", f, left[f], want)
		}
	}
	if !p.HostStorageKeyed || !strings.HasPrefix(p.App.HostStorage, "DefaultEndpointsProtocol") || !strings.Contains(p.HostStorageFrom, "sealed") {
		t.Errorf("a key-based host storage: %q keyed %v (%s)", p.App.HostStorage, p.HostStorageKeyed, p.HostStorageFrom)
	}
	if p.App.EventHubs != "" || !strings.Contains(p.EventHubsFrom, "key-based") {
		t.Errorf("a key-based Event Hubs connection was copied or not explained: %q (%s)", p.App.EventHubs, p.EventHubsFrom)
	}

	identity := Settings{"AzureWebJobsStorage__blobServiceUri": "https://a.blob.core.windows.net/", "AzureWebJobsStorage__accountName": "ignored", "WEBSITE_TIME_ZONE": "UTC"}
	p = Propose(site, "staging", fns[:1], identity, "blob.core.windows.net")
	if p.App.HostStorage != "https://a.blob.core.windows.net" || p.HostStorageKeyed || p.App.ID != "func-orders-eu-staging" || p.App.Slot != "staging" {
		t.Errorf("identity-based: %+v", p.App)
	}
	if p = Propose(site, "", nil, nil, "blob.core.windows.net"); p.App.HostStorage != "" || !strings.Contains(p.HostStorageFrom, "could not be read") {
		t.Errorf("without settings: %q", p.HostStorageFrom)
	}
}

// TestPlanSettingsKeepNoSecret: of an app's settings only what a plan
// reads is kept, and a key-based Event Hubs connection only as "set".
func TestPlanSettingsKeepNoSecret(t *testing.T) {
	all := Settings{"AzureWebJobsStorage__accountName": "a", "WEBSITE_TIME_ZONE": "UTC", "Hub": "Endpoint=sb://x/;SharedAccessKey=secret",
		"Hub__fullyQualifiedNamespace": "ns.servicebus.windows.net", "PAYMENT_KEY": "secret"}
	got := PlanSettings(all, []Function{fn("Hubs", EventHubs, Detail{Name: "connection", Setting: "Hub"})})
	if len(got) != 4 || got["Hub"] != "set" || got["PAYMENT_KEY"] != "" || got["Hub__fullyQualifiedNamespace"] == "" {
		t.Errorf("kept %v", got)
	}
	if PlanSettings(nil, nil) != nil {
		t.Error("no settings read became some")
	}
}

// TestZeroCodeLeavesAnotherCollectorAlone: the four settings point the
// host at Fusebox with the key; an app exporting elsewhere is refused,
// one already pointed at Fusebox is not.
func TestZeroCodeLeavesAnotherCollectorAlone(t *testing.T) {
	s := ZeroCodeSettings("https://fusebox.example.com/", "fbx_orders_k")
	if s["OTEL_EXPORTER_OTLP_ENDPOINT"] != "https://fusebox.example.com" || s["OTEL_EXPORTER_OTLP_HEADERS"] != "Authorization=Bearer fbx_orders_k" ||
		s["AzureFunctionsJobHost__telemetryMode"] != "OpenTelemetry" || s["OTEL_EXPORTER_OTLP_PROTOCOL"] != "http/protobuf" {
		t.Errorf("settings %v", s)
	}
	for k := range s {
		if strings.HasPrefix(strings.ToUpper(k), "APPLICATIONINSIGHTS_") {
			t.Errorf("zero-code writes %s", k)
		}
	}
	check := ZeroCodeConflict("https://fusebox.example.com", "orders")
	const vendorKey = "x-vendor-key=s3cr3t"
	for name, current := range map[string]map[string]string{
		"another collector":                  {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example.com"},
		"a vendor's traces endpoint and key": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://otlp.vendor.example/v1/traces", "OTEL_EXPORTER_OTLP_HEADERS": vendorKey},
		"a vendor's logs endpoint alone":     {"otel_exporter_otlp_logs_endpoint": "https://otlp.vendor.example/v1/logs"},
		"a vendor's key alone":               {"OTEL_EXPORTER_OTLP_HEADERS": vendorKey},
		"a signal's own headers":             {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": vendorKey},
		"another app's Fusebox key":          {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer fbx_billing_k"},
		"Fusebox's key and a vendor's":       {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer fbx_orders_k," + vendorKey},
		"another telemetry mode":             {"AzureFunctionsJobHost__telemetryMode": "ApplicationInsights"},
		"gRPC chosen by hand":                {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		err := check(current)
		if err == nil || strings.Contains(err.Error(), "vendor") || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "collector.example") {
			t.Errorf("%s: %v (want a refusal that names settings, not their values)", name, err)
		}
	}
	for name, ok := range map[string]map[string]string{
		"nothing set":                        {},
		"Fusebox's endpoint, in other case":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://FUSEBOX.example.com/"},
		"Fusebox's traces path":              {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://fusebox.example.com/v1/traces"},
		"this app's Fusebox key, rotated":    {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer fbx_orders_old"},
		"Application Insights beside it":     {"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=abc"},
		"the settings Fusebox writes, again": ZeroCodeSettings("https://fusebox.example.com", "fbx_orders_k"),
	} {
		if err := check(ok); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A plan reads the headers as set, their value dropped, and is refused.
	plan := PlanSettings(Settings{"OTEL_EXPORTER_OTLP_HEADERS": vendorKey, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://otlp.vendor.example"}, nil)
	if plan["OTEL_EXPORTER_OTLP_HEADERS"] != "set" || ZeroCodeRefusal(plan, "https://fusebox.example.com", "orders") == "" {
		t.Errorf("the plan's settings %v are not refused", plan)
	}
}
