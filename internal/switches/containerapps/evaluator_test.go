package containerapps_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appcontainers/armappcontainers/v3"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/evaltest"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
)

const (
	maxBatch = "AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize"
	prefetch = "AzureFunctionsJobHost__extensions__eventHubs__prefetchCount"
)

// A throttle on Container Apps is the host containers' environment: the
// throttle and a trip of another function decided in the same tick start
// one revision, and the ramp puts back exactly what the containers had
// (a variable that was absent is removed again), sidecars and secret
// references untouched.
func TestAThrottleAndATripOfAContainerAppAreOneRevision(t *testing.T) {
	st := evaltest.Store(t)
	a := newApp()
	host := a.template.Containers[0]
	host.Env = append(host.Env, env(maxBatch, "100")...)
	before, sidecar := a.envOf("functions"), a.envOf("otel-sidecar")
	sw := newSwitch(t, a)
	if err := st.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	for _, c := range []circuit.Circuit{
		{AppID: app.ID, Function: "ProcessOrders", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, EventHub: "orders", Throttle: circuit.Throttle{Threshold: 40, Quiet: time.Minute}}},
		{AppID: app.ID, Function: "Import", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}},
	} {
		if err := c.Validate(&app); err != nil {
			t.Fatalf("%s: %v", c.Function, err)
		}
		if err := st.Circuits.Put(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	clk := evaltest.Clock()
	eval := evaltest.Evaluator(t, st, sw, circuit.EvaluatorSettings{Clock: clk})
	tick := func() { t.Helper(); evaltest.Tick(t, eval) }
	if err := st.Failures.Record(t.Context(), "w", []storage.Report{
		{App: app.ID, Function: "ProcessOrders", Second: clk.Now(), Count: 50},
		{App: app.ID, Function: "Import", Second: clk.Now(), Count: 101},
	}); err != nil {
		t.Fatal(err)
	}
	tick()
	if a.patches != 1 {
		t.Fatalf("%d template writes for a throttle and a trip of one app in one tick; want 1 (one new revision)", a.patches)
	}
	want := maps.Clone(before)
	want["AzureWebJobs_Import_Disabled"], want[maxBatch], want[prefetch] = "true", "25", "75"
	if got := a.envOf("functions"); !maps.Equal(got, want) {
		t.Fatalf("host env after the tick: %v\nwant %v", got, want)
	}
	for _, fn := range []string{"ProcessOrders", "Import"} {
		if c, err := st.Circuits.Get(t.Context(), app.ID, fn); err != nil || c.Pending() {
			t.Fatalf("%s: pending %v, %v", fn, c.Pending(), err)
		}
	}
	// Two quiet minutes: a half, then exactly what was there.
	for range 2 {
		clk.Advance(time.Minute)
		tick()
	}
	want = maps.Clone(before)
	want["AzureWebJobs_Import_Disabled"] = "true"
	if got := a.envOf("functions"); !maps.Equal(got, want) {
		t.Errorf("host env after the ramp: %v\nwant %v (prefetchCount was absent: removed, not written with a default)", got, want)
	}
	if got := a.envOf("otel-sidecar"); !maps.Equal(got, sidecar) {
		t.Errorf("the sidecar was changed: %v", got)
	}
	if c, _ := st.Circuits.Get(t.Context(), app.ID, "ProcessOrders"); c.State != circuit.Closed || c.Lowered != nil {
		t.Errorf("ProcessOrders after the ramp: %s, lowered %v", c.State, c.Lowered)
	}
}

// A lever the host container takes from a secret is not written over
// (the reference would be lost, and could not be put back), nor one two
// host containers set differently; Settings leaves both out.
func TestATunedVariableFromASecretOrDisagreedOnIsRefused(t *testing.T) {
	a := newApp()
	host := a.template.Containers[0]
	host.Env = append(host.Env, &armappcontainers.EnvironmentVar{Name: to.Ptr(maxBatch), SecretRef: to.Ptr("batch")})
	sw := newSwitch(t, a)
	settings, err := sw.Settings(t.Context(), app)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := settings[maxBatch]; ok {
		t.Errorf("Settings has %s, which comes from a secret: %v", maxBatch, settings)
	}
	if settings["ORDERS_DB"] != "Server=db" {
		t.Errorf("Settings = %v, want the plain variables", settings)
	}
	err = sw.Tune(t.Context(), app, nil, map[string]*string{maxBatch: to.Ptr("25")})
	if !errors.Is(err, armwrite.ErrPermanent) || a.patches != 0 {
		t.Errorf("tuning a variable from a secret: %v, %d writes; want a permanent refusal and no write", err, a.patches)
	}

	b := newApp()
	second := *b.template.Containers[0]
	second.Name, second.Env = to.Ptr("functions-2"), append(env(maxBatch, "64"), env("FUNCTIONS_WORKER_RUNTIME", "dotnet-isolated")...)
	b.template.Containers[0].Env = append(b.template.Containers[0].Env, env(maxBatch, "100")...)
	b.template.Containers = append(b.template.Containers, &second)
	sw = newSwitch(t, b)
	if settings, err := sw.Settings(t.Context(), app); err != nil || settings[maxBatch] != "" {
		t.Errorf("Settings = %v, %v; want %s left out (the host containers disagree)", settings, err, maxBatch)
	}
	if err := sw.Tune(t.Context(), app, nil, map[string]*string{maxBatch: to.Ptr("25")}); !errors.Is(err, armwrite.ErrPermanent) || b.patches != 0 {
		t.Errorf("tuning a variable two hosts disagree on: %v, %d writes", err, b.patches)
	}
}
