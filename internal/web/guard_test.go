package web_test

import (
	"errors"
	"html"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/testenv"
)

// An operator opens Discover, follows Guard… on the unguarded app, and
// reviews the plan: a circuit for each event-driven function with the
// defaults of its kind (the Event Hubs one trips early on a count, the
// queue one on a sustained share), a job for the timer with its schedule
// and the app's time zone, and why the HTTP and SQL functions get nothing.
// A threshold that is no number is refused and nothing is made; then she
// unticks the queue circuit, tunes the Event Hubs one and confirms once:
// the app is registered with identity-based host storage and Event Hubs
// (no secret copied), and exactly what was ticked is created.
func TestGuardingAFoundAppInOneConfirmation(t *testing.T) {
	t.Parallel()
	arm, appSettings := apptest.GuardableARM(subOrders)
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": subOrders},
		apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	operator := newBrowser(t, srv.URL)
	operator.signIn("olivia")
	rows := testRows(operator.get("/apps/discover").body)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want the one function app", len(rows))
	}
	href := html.UnescapeString(attr(rows[0], `data-testid="guard"`, "href"))
	page := operator.get(href)
	wantStatus(t, page, http.StatusOK)
	circuits := strings.Split(page.body, `data-testid="proposed-circuit"`)[1:]
	if len(circuits) != 2 {
		t.Fatalf("%d proposed circuits, want ProcessOrders and TakeOrders:\n%s", len(circuits), page.body)
	}
	if c := circuits[0]; !strings.Contains(c, "ProcessOrders") || !strings.Contains(c, "orders/fusebox") || !strings.Contains(c, `name="threshold_ProcessOrders" value="10"`) || !strings.Contains(c, "trips early") {
		t.Errorf("the Event Hubs circuit is not proposed with its kind's defaults: %s", c)
	}
	if c := circuits[1]; !strings.Contains(c, "TakeOrders") || !strings.Contains(c, "50") || strings.Contains(c, "threshold_TakeOrders") {
		t.Errorf("the queue circuit is not proposed with a ratio rule: %s", c)
	}
	proposed := strings.Split(page.body, `data-testid="proposed-job"`)[1:]
	if len(proposed) != 1 || !strings.Contains(proposed[0], "0 0 2 * * *") || !strings.Contains(proposed[0], "W. Europe Standard Time") {
		t.Errorf("the timer's job is not proposed with its schedule and time zone:\n%s", page.body)
	}
	left := page.body[strings.Index(page.body, `data-testid="left"`):]
	if !strings.Contains(left, "Api") || !strings.Contains(left, "HTTP") || !strings.Contains(left, "Mirror") || !strings.Contains(left, "sqlTrigger") {
		t.Errorf("the functions proposed nothing are not named with why: %s", left)
	}
	if !strings.Contains(page.body, "AzureWebJobsStorage__accountName (identity-based)") {
		t.Errorf("the page does not say where host storage comes from:\n%s", page.body)
	}
	if strings.Contains(page.body, "sk_live_do-not-show-me") {
		t.Fatal("an app setting's secret reached the page")
	}

	csrf := csrfField.FindStringSubmatch(page.body)[1]
	form := url.Values{"_csrf": {csrf}, "subscription": {subOrders}, "resource_group": {"rg-orders"}, "site": {"func-orders"},
		"id": {"orders"}, "name": {"Orders"}, "recipients": {"oncall@example.com"},
		"circuit": {"ProcessOrders"}, "threshold_ProcessOrders": {"many"}, "window_ProcessOrders": {"2m"}, "window_TakeOrders": {"5m"},
		"job": {"Nightly"}, "grace_Nightly": {"10m"}}
	refused := operator.post("/apps/discover/guard", form)
	wantStatus(t, refused, http.StatusUnprocessableEntity)
	if !strings.Contains(refused.body, "ProcessOrders: the failures must be a whole number") {
		t.Errorf("a bad threshold is not explained:\n%s", refused.body)
	}
	if _, err := srv.App.Store.Apps.Get(t.Context(), "orders"); !errors.Is(err, circuit.ErrNoApp) {
		t.Fatalf("a refused plan registered the app: %v", err)
	}

	form.Set("threshold_ProcessOrders", "25")
	form.Set("zero_code", "on")
	done := operator.post("/apps/discover/guard", form)
	wantStatus(t, done, http.StatusOK)
	if !strings.Contains(done.body, `data-testid="app-key"`) || !strings.Contains(done.body, "Circuit ProcessOrders: ") || !strings.Contains(done.body, "Job Nightly: ") {
		t.Errorf("the key page does not say what was made:\n%s", done.body)
	}
	if !strings.Contains(done.body, "Zero-code reporting is on") {
		t.Errorf("the key page does not say zero-code reporting is on:\n%s", done.body)
	}
	key := regexp.MustCompile(`data-testid="app-key">([^<]+)<`).FindStringSubmatch(done.body)[1]
	got := appSettings.Get()
	for k, want := range map[string]string{"AzureFunctionsJobHost__telemetryMode": "OpenTelemetry", "OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer " + key, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "PAYMENT_API_KEY": "sk_live_do-not-show-me"} {
		if got[k] != want {
			t.Errorf("app setting %s = %q, want %q", k, got[k], want)
		}
	}
	app, err := srv.App.Store.Apps.Get(t.Context(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if app.HostStorage != "https://ordersstore.blob.core.windows.net" || app.EventHubs != "orders-ns.servicebus.windows.net" || app.Site != "func-orders" || app.Switch != circuit.SwitchARM || app.Hosting.Plan != circuit.PlanAppService {
		t.Errorf("registered %+v", app)
	}
	cs, err := srv.App.Store.Circuits.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("%d circuits, want only the ticked ProcessOrders", len(cs))
	}
	if c := cs[0]; c.Function != "ProcessOrders" || c.Threshold != 25 || c.Window != 2*time.Minute || c.EventHub != "orders/fusebox" || !slices.Equal(c.Recipients, []string{"oncall@example.com"}) || c.State != circuit.Closed {
		t.Errorf("circuit %+v", c)
	}
	all, err := srv.App.Store.Jobs.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var js []jobs.Job
	for _, j := range all {
		if j.AppID != "" { // Fusebox's own jobs name no app
			js = append(js, j)
		}
	}
	if len(js) != 1 || js[0].Function != "Nightly" || js[0].AppID != "orders" || js[0].Name != "Nightly (orders)" || js[0].Schedule != "0 0 2 * * *" || js[0].TimeZone != "W. Europe Standard Time" || js[0].Grace != 10*time.Minute {
		t.Errorf("jobs %+v", js)
	}

	again := operator.get(href)
	if !strings.Contains(again.body, "guarded already") {
		t.Errorf("a guarded site is offered again:\n%s", again.body)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	if r := viewer.get(href); r.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer opened the guard page: %d", r.StatusCode)
	}
}

// The Apps page says what changed in Azure under a guarded app, as the
// background check last found it (at start and every 10 minutes): the
// event-driven function no circuit guards, the timer without a job, the
// circuit whose function is gone and the one whose hub changed; /metrics
// counts the unguarded functions.
func TestTheAppsPageSaysWhatDriftedInAzure(t *testing.T) {
	t.Parallel()
	arm, _ := apptest.GuardableARM(subOrders)
	srv := apptest.StartWith(t, nil, apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: "orders", SubscriptionID: subOrders, ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []circuit.Circuit{{Function: "ProcessOrders", Settings: circuit.Settings{EventHub: "orders-old"}}, {Function: "Retired"}} {
		c.AppID, c.Threshold, c.Window, c.State = "orders", 10, time.Minute, circuit.Closed
		if err := srv.App.Store.Circuits.Put(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	srv.App.CheckDrift(t.Context())
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/apps")
	i := strings.Index(page.body, `data-testid="drift"`)
	if i < 0 {
		t.Fatalf("no drift on the Apps page:\n%s", page.body)
	}
	drift := page.body[i:]
	drift = drift[:strings.Index(drift, "</div>")]
	for _, want := range []string{"No circuit for event-driven Mirror, TakeOrders", "No job for timer Nightly", "Circuits whose function is gone: Retired",
		"Circuit ProcessOrders was set up for hub orders-old; its trigger is now hub orders"} {
		if !strings.Contains(drift, want) {
			t.Errorf("the drift lacks %q:\n%s", want, drift)
		}
	}
	if m := viewer.get("/metrics"); !strings.Contains(m.body, `fusebox_unguarded_functions{app="orders"} 2`) {
		t.Errorf("/metrics does not count the unguarded function")
	}
}

// The demo's Azure (`make run`'s stand-in for ARM, demo.ARM) is
// discoverable and guardable as a real subscription is: Discover lists
// func-billing with its staging slot and func-shipping on Flex
// Consumption; guarding func-billing with the plan as proposed makes its
// two event-driven circuits and its timer's job, takes its host storage
// (the demo's Azurite) sealed, and copies no key-based Event Hubs
// connection.
func TestTheDemosAzureIsGuardable(t *testing.T) {
	t.Parallel()
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": demo.Subscription},
		apptest.Options{ARMTransport: demo.ARM(testenv.ConnectionString(t))})
	operator := newBrowser(t, srv.URL)
	operator.signIn("olivia")
	rows := testRows(operator.get("/apps/discover").body)
	if len(rows) != 2 || !strings.Contains(rows[0], demo.BillingSite) || !strings.Contains(rows[0], "<code>staging</code>") ||
		!strings.Contains(rows[1], demo.ShippingSite) || !strings.Contains(rows[1], "Flex Consumption") {
		t.Fatalf("the demo's Discover rows: %v", rows)
	}
	page := operator.get(html.UnescapeString(attr(rows[0], `data-testid="guard"`, "href")))
	wantStatus(t, page, http.StatusOK)
	form := url.Values{"_csrf": {csrfField.FindStringSubmatch(page.body)[1]}, "subscription": {demo.Subscription}, "resource_group": {"rg-billing"},
		"site": {demo.BillingSite}, "id": {"func-billing"}, "name": {"Billing"}, "recipients": {"billing-oncall@example.com"},
		"circuit": {"ChargeCards", "RetryRefunds"}, "job": {"NightlyInvoices"}}
	for _, f := range []string{"threshold_ChargeCards", "window_ChargeCards", "window_RetryRefunds", "grace_NightlyInvoices"} {
		form.Set(f, html.UnescapeString(attr(page.body, `name="`+f+`"`, "value")))
	}
	done := operator.post("/apps/discover/guard", form)
	wantStatus(t, done, http.StatusOK)
	app, err := srv.App.Store.Apps.Get(t.Context(), "func-billing")
	if err != nil {
		t.Fatal(err)
	}
	if app.HostStorage != testenv.ConnectionString(t) || app.EventHubs != "" || !app.Linux {
		t.Errorf("registered host storage %t, Event Hubs %q, Linux %v", app.HostStorage != "", app.EventHubs, app.Linux)
	}
	cs, err := srv.App.Store.Circuits.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Function)
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "ChargeCards RetryRefunds" {
		t.Errorf("circuits %v, want ChargeCards and RetryRefunds:\n%s", names, done.body)
	}
	js, err := srv.App.Store.Jobs.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(js, func(j jobs.Job) bool {
		return j.Function == "NightlyInvoices" && j.Schedule == "0 0 3 * * *" && j.TimeZone == "W. Europe Standard Time"
	}) {
		t.Errorf("no job for NightlyInvoices with its schedule and zone")
	}
}

// An app whose host exports traces to a vendor, with the vendor's key in
// OTEL_EXPORTER_OTLP_HEADERS: the plan says why zero-code reporting is not
// offered, and a form that asks for it anyway changes none of the app's
// settings (before, the headers were replaced by Fusebox's key, which the
// vendor's traces endpoint then received).
func TestGuardingAnAppWithAVendorsExporterChangesNoneOfItsSettings(t *testing.T) {
	t.Parallel()
	arm, appSettings := apptest.GuardableARM(subOrders)
	appSettings.Set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://otlp.vendor.example/v1/traces")
	appSettings.Set("OTEL_EXPORTER_OTLP_HEADERS", "x-vendor-key=vendor-s3cr3t")
	before := appSettings.Get()
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": subOrders},
		apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	operator := newBrowser(t, srv.URL)
	operator.signIn("olivia")
	rows := testRows(operator.get("/apps/discover").body)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want the one function app", len(rows))
	}
	page := operator.get(html.UnescapeString(attr(rows[0], `data-testid="guard"`, "href")))
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(page.body, `data-testid="zero-code-refused"`) || strings.Contains(page.body, `name="zero_code"`) ||
		!strings.Contains(page.body, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
		t.Errorf("the plan offers zero-code reporting or does not say why not:\n%s", page.body)
	}
	if strings.Contains(page.body, "vendor-s3cr3t") || strings.Contains(page.body, "otlp.vendor.example") {
		t.Fatal("a setting's value reached the page")
	}
	csrf := csrfField.FindStringSubmatch(page.body)[1]
	form := url.Values{"_csrf": {csrf}, "subscription": {subOrders}, "resource_group": {"rg-orders"}, "site": {"func-orders"},
		"id": {"orders"}, "name": {"Orders"}, "recipients": {"oncall@example.com"}, "circuit": {"ProcessOrders"},
		"threshold_ProcessOrders": {"25"}, "window_ProcessOrders": {"2m"}, "window_TakeOrders": {"5m"}, "zero_code": {"on"}}
	done := operator.post("/apps/discover/guard", form)
	wantStatus(t, done, http.StatusOK)
	if strings.Contains(done.body, "Zero-code reporting is on") {
		t.Errorf("zero-code reporting was switched on:\n%s", done.body)
	}
	if got := appSettings.Get(); !maps.Equal(got, before) {
		t.Errorf("guarding changed the app's settings:\nbefore %v\nafter  %v", before, got)
	}
	if _, err := srv.App.Store.Apps.Get(t.Context(), "orders"); err != nil {
		t.Errorf("the app was not registered: %v", err)
	}
}
