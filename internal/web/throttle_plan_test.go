package web_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
)

// Before a trip by hand, the operator sees what lowering the function's
// concurrency instead would write, read from the app's own settings
// through ARM: the queue's batch the app set (8) to a quarter, the
// threshold it did not set from the smallest default; an Event Hubs
// function's own options. Nothing is written.
func TestTheTripPageShowsWhatLoweringWouldWrite(t *testing.T) {
	t.Parallel()
	arm, appSettings := apptest.GuardableARM(subOrders)
	srv := apptest.StartWith(t, nil, apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: "orders", SubscriptionID: subOrders, ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ProcessOrders", "TakeOrders"} {
		if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: f, Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, State: circuit.Closed}); err != nil {
			t.Fatal(err)
		}
	}
	before := appSettings.Get()
	operator := newBrowser(t, srv.URL)
	operator.signIn("olivia")
	for _, tc := range []struct {
		function string
		want     []string
	}{
		{"TakeOrders", []string{"AzureFunctionsJobHost__extensions__queues__batchSize: 8 → 2", "AzureFunctionsJobHost__extensions__queues__newBatchThreshold: absent → 2"}},
		{"ProcessOrders", []string{"AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize: absent → 2", "AzureFunctionsJobHost__extensions__eventHubs__prefetchCount: absent → 75"}},
	} {
		page := operator.get("/circuits/orders/" + tc.function + "/trip")
		wantStatus(t, page, http.StatusOK)
		plan := section(page.body, `data-testid="lower-instead"`)
		for _, w := range tc.want {
			if !strings.Contains(plan, "<code>"+w+"</code>") {
				t.Errorf("%s: the trip page's plan lacks %q:\n%s", tc.function, w, plan)
			}
		}
		if !strings.Contains(page.body, "Mirror, Nightly") {
			t.Errorf("%s: the switch's cost does not name the app's other functions", tc.function)
		}
	}
	if after := appSettings.Get(); len(after) != len(before) {
		t.Errorf("showing the plan wrote the app's settings: %v", after)
	}
}

// A closed circuit with a throttle stage shows on its page what the
// throttle would write if it fired now, and what writing costs the app,
// before it is ever applied on its own: the part is loaded after the page
// (it reads the app's settings through ARM) and writes nothing. A circuit
// without a throttle stage has no such part.
func TestACircuitPageShowsWhatItsThrottleWouldWrite(t *testing.T) {
	t.Parallel()
	arm, appSettings := apptest.GuardableARM(subOrders)
	srv := apptest.StartWith(t, nil, apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: "orders", SubscriptionID: subOrders, ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []circuit.Circuit{
		{AppID: "orders", Function: "TakeOrders", Settings: circuit.Settings{Threshold: 10, Window: time.Minute, Throttle: circuit.Throttle{Threshold: 4, Kind: "queue"}}},
		{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{Threshold: 10, Window: time.Minute}},
	} {
		if err := srv.App.Store.Circuits.Put(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	before := appSettings.Get()
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/circuits/orders/TakeOrders")
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(section(page.body, `data-testid="throttle"`), `hx-get="/circuits/orders/TakeOrders/throttle-plan"`) {
		t.Fatalf("the circuit page does not load its throttle's plan:\n%s", section(page.body, `data-testid="throttle"`))
	}
	part := viewer.get("/circuits/orders/TakeOrders/throttle-plan")
	wantStatus(t, part, http.StatusOK)
	for _, w := range []string{
		"<code>AzureFunctionsJobHost__extensions__queues__batchSize: 8 → 2</code>",
		"<code>AzureFunctionsJobHost__extensions__queues__newBatchThreshold: absent → 2</code>",
		"restarts the app", "Mirror, Nightly",
	} {
		if !strings.Contains(part.body, w) {
			t.Errorf("the throttle's plan lacks %q:\n%s", w, part.body)
		}
	}
	other := viewer.get("/circuits/orders/ProcessOrders")
	if strings.Contains(other.body, "/throttle-plan") {
		t.Error("a circuit without a throttle stage offers a throttle plan")
	}
	wantStatus(t, viewer.get("/circuits/orders/ProcessOrders/throttle-plan"), http.StatusNotFound)
	if after := appSettings.Get(); len(after) != len(before) {
		t.Errorf("showing the plan wrote the app's settings: %v", after)
	}
}

// What a throttle handed back (settings changed by hand while it held
// them) is said on the circuit's page and in the API.
func TestACircuitSaysWhatItsThrottleHandedBack(t *testing.T) {
	t.Parallel()
	srv := apptest.StartStill(t, nil) // no evaluator applies, or hands back, the throttle written here
	settings := t.TempDir() + "/local.settings.json"
	if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: settings}); err != nil {
		t.Fatal(err)
	}
	batch, was := "AzureFunctionsJobHost__extensions__eventHubs__prefetchCount", "200"
	released := "AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize set to 64 by hand while the throttle held it at 2"
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{Threshold: 100, Window: time.Minute, EventHub: "orders", Throttle: circuit.Throttle{Threshold: 40}}, State: circuit.Throttled, Episode: 1}); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(t.Context(), "orders", "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.SetLowered(t.Context(), lease.Fence{}, ci, "eventHub", map[string]*string{batch: &was}); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.ReleaseLowered(t.Context(), lease.Fence{}, ci, map[string]*string{batch: &was}, released); err != nil {
		t.Fatal(err)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/circuits/orders/ProcessOrders")
	if shown := section(page.body, `data-testid="throttle"`); !strings.Contains(shown, "Handed back, left as set and not put back at the end: "+released+".") {
		t.Errorf("the throttle section does not say what it handed back:\n%s", shown)
	}
	api := viewer.get("/api/v1/circuits/orders/ProcessOrders")
	wantStatus(t, api, http.StatusOK)
	if !strings.Contains(api.body, `"released":"`+released+`"`) {
		t.Errorf("the API does not say what the throttle handed back: %s", api.body)
	}
}

// A viewer reloading a circuit's throttle plan, and the app's functions
// page, costs ARM one read of the app's settings and one list of its
// functions for 30 s, not one each view. Only reads made for a request
// are counted: the app's own loops read the settings on their own time.
func TestAViewerReloadingCostsARMOneReadAWhile(t *testing.T) {
	t.Parallel()
	arm, _ := apptest.GuardableARM(subOrders)
	var settingsReads, functionLists atomic.Int32
	list, listFns := arm.ListApplicationSettings, arm.NewListFunctionsPager
	arm.ListApplicationSettings = func(ctx context.Context, rg, name string, o *armappservice.WebAppsClientListApplicationSettingsOptions) (azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], azfake.ErrorResponder) {
		if ctx.Value(http.ServerContextKey) != nil { // a page's read, not a background loop's
			settingsReads.Add(1)
		}
		return list(ctx, rg, name, o)
	}
	arm.NewListFunctionsPager = func(rg, name string, o *armappservice.WebAppsClientListFunctionsOptions) azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse] {
		functionLists.Add(1)
		return listFns(rg, name, o)
	}
	srv := apptest.StartWith(t, nil, apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: "orders", SubscriptionID: subOrders, ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "TakeOrders", Settings: circuit.Settings{Threshold: 10, Window: time.Minute, Throttle: circuit.Throttle{Threshold: 4, Kind: "queue"}}}); err != nil {
		t.Fatal(err)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	view := func() {
		wantStatus(t, viewer.get("/circuits/orders/TakeOrders/throttle-plan"), http.StatusOK)
		wantStatus(t, viewer.get("/apps/orders/functions"), http.StatusOK)
	}
	view()
	s1, f1 := settingsReads.Load(), functionLists.Load()
	for range 4 {
		view()
	}
	if s, f := settingsReads.Load(), functionLists.Load(); s != s1 || f != f1 {
		t.Errorf("four more reloads read the settings %d more times and listed the functions %d more times; want none (before: 8 and 8)", s-s1, f-f1)
	}
}
