package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth/oidctest"
	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

const alertsSecret = "0123456789abcdef0123456789abcdef-alerts"

func postAlert(t *testing.T, base, secret, body string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/hooks/azure-monitor/"+secret, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return newBrowser(t, base).do(req)
}

// An action group's webhook in the common alert schema is taken behind the
// secret in its path, kept once however often it is sent again, refused
// with a reason when it is not such an alert, and shown to admins with
// its rule, condition and resource; a wrong secret answers as a path that
// names nothing, and without a secret configured no path takes alerts.
func TestAzureMonitorAlertsAreTakenOnceAndShown(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": alertsSecret})
	// The samples fired on 2026-12-07: moved to the test clock's day.
	today := srv.Clock.Now().UTC().Format("2006-01-02")
	read := func(name string) []byte {
		b, err := os.ReadFile("../azalerts/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.ReplaceAll(string(b), "2026-12-07T", today+"T"))
	}
	metric, resolved := read("metric.json"), read("logsearch.json")
	// No circuit names its rule: it is kept, and says so.
	first := postAlert(t, srv.URL, alertsSecret, string(metric))
	wantStatus(t, first, http.StatusAccepted)
	if !strings.Contains(first.body, `"acted_on":[]`) || !strings.Contains(first.body, `"note":"names no circuit or downstream`) {
		t.Errorf("an alert whose rule nothing names: %s; want it to say so", first.body)
	}
	again := postAlert(t, srv.URL, alertsSecret, string(metric))
	if again.StatusCode != http.StatusOK || !strings.Contains(again.body, "received already") {
		t.Errorf("the same alert sent again: %d %s", again.StatusCode, again.body)
	}
	wantStatus(t, postAlert(t, srv.URL, alertsSecret, string(resolved)), http.StatusAccepted)
	bad := postAlert(t, srv.URL, alertsSecret, `{"schemaId": "AzureMonitorMetricAlert", "data": {}}`)
	if bad.StatusCode != http.StatusBadRequest || !strings.Contains(bad.body, "Enable the common alert schema") {
		t.Errorf("an alert in the old schema: %d %s", bad.StatusCode, bad.body)
	}
	old := postAlert(t, srv.URL, alertsSecret, strings.ReplaceAll(string(metric), today, "2025-01-01"))
	if old.StatusCode != http.StatusBadRequest || !strings.Contains(old.body, "not within the last 31 days") {
		t.Errorf("an alert that fired long ago: %d %s", old.StatusCode, old.body)
	}
	wrong := postAlert(t, srv.URL, strings.Replace(alertsSecret, "0", "1", 1), string(metric))
	none := postAlert(t, srv.URL, "x", string(metric))
	if wrong.StatusCode != http.StatusNotFound || none.StatusCode != http.StatusNotFound {
		t.Errorf("a wrong secret: %d, no secret: %d; want 404 both", wrong.StatusCode, none.StatusCode)
	}

	admin := newBrowser(t, srv.URL)
	admin.signIn("olivia")
	page := admin.get("/alerts")
	wantStatus(t, page, http.StatusOK)
	if strings.Count(page.body, `data-testid="alert-row"`) != 2 || !strings.Contains(page.body, "inventory-db-dtu-high") ||
		!strings.Contains(page.body, "orders-store-timeouts") || !strings.Contains(page.body, "/databases/inventory") ||
		strings.Count(page.body, "names no circuit or downstream") != 2 {
		t.Errorf("the Alerts page does not show the two alerts, once each:\n%.3000s", page.body)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	wantStatus(t, viewer.get("/alerts"), http.StatusForbidden)

	off := apptest.Start(t, nil)
	if r := postAlert(t, off.URL, "x", string(metric)); r.StatusCode != http.StatusNotFound {
		t.Errorf("with no secret configured: %d", r.StatusCode)
	}
	if r := postAlert(t, off.URL, alertsSecret, string(metric)); r.StatusCode != http.StatusNotFound {
		t.Errorf("with no secret configured, a guessed one: %d", r.StatusCode)
	}
}

// A "Fired" alert trips the circuits whose alert rules name its rule's
// resource id, once, as Azure Monitor; circuits naming another rule or
// none stay as they were. "Resolved" resumes nothing: it starts a trial of
// what the rule tripped, and the circuit's own counts close it after a
// quiet window; a circuit a person tripped is left to them. The same
// alert sent again after that trips nothing.
func TestAFiredAlertTripsTheCircuitsNamingItsRuleOnce(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": alertsSecret})
	ctx := t.Context()
	st := srv.App.Store
	if err := demo.Seed(ctx, st, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	today := srv.Clock.Now().UTC().Format("2006-01-02")
	b, err := os.ReadFile("../azalerts/testdata/metric.json")
	if err != nil {
		t.Fatal(err)
	}
	fired := strings.ReplaceAll(string(b), "2026-12-07T", today+"T")
	rule := "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-data/providers/Microsoft.Insights/metricAlerts/inventory-db-dtu-high" // as the portal spells it
	for fn, rules := range map[string][]string{"ProcessOrders": {rule}, "SendReceipts": {strings.Replace(rule, "dtu-high", "cpu-high", 1)}} {
		ci, err := st.Circuits.Get(ctx, demo.AppID, fn)
		if err != nil {
			t.Fatal(err)
		}
		ci.AlertRules = rules
		if err := st.Circuits.Put(ctx, ci); err != nil {
			t.Fatal(err)
		}
	}
	state := func(fn string) circuit.Circuit {
		t.Helper()
		ci, err := st.Circuits.Get(ctx, demo.AppID, fn)
		if err != nil {
			t.Fatal(err)
		}
		return ci
	}
	before := state("SendReceipts")

	got := postAlert(t, srv.URL, alertsSecret, fired)
	if got.StatusCode != http.StatusAccepted || !strings.Contains(got.body, `"acted_on":["orders-demo/ProcessOrders"]`) {
		t.Fatalf("the fired alert: %d %s", got.StatusCode, got.body)
	}
	if ci := state("ProcessOrders"); !ci.State.TriggerOff() || !strings.Contains(ci.Reason, "alert rule inventory-db-dtu-high fired") {
		t.Errorf("ProcessOrders after its rule fired: %s, %q", ci.State, ci.Reason)
	}
	if after := state("SendReceipts"); after.State != before.State || after.Episode != before.Episode {
		t.Errorf("SendReceipts, naming another rule, went from %s to %s", before.State, after.State)
	}
	flips, err := st.Circuits.Flips(ctx, demo.AppID, "ProcessOrders", 1)
	if err != nil || len(flips) == 0 || flips[0].Actor != "Azure Monitor" {
		t.Errorf("the flip log's last entry: %+v %v; want Azure Monitor's", flips, err)
	}

	// ImportPrices, tripped by a person, names the rule too: Resolved
	// leaves it to them.
	imp := state("ImportPrices")
	imp.AlertRules = []string{rule}
	if err := st.Circuits.Put(ctx, imp); err != nil {
		t.Fatal(err)
	}
	resolved := strings.Replace(fired, `"monitorCondition": "Fired"`, `"monitorCondition": "Resolved", "resolvedDateTime": "`+today+`T02:30:00Z"`, 1)
	got = postAlert(t, srv.URL, alertsSecret, resolved)
	if got.StatusCode != http.StatusAccepted || !strings.Contains(got.body, `"acted_on":["orders-demo/ProcessOrders"]`) {
		t.Fatalf("the resolved alert: %d %s", got.StatusCode, got.body)
	}
	if ci := state("ProcessOrders"); ci.State != circuit.HalfOpen || !strings.Contains(ci.Reason, "resolved: trigger on for a trial") {
		t.Errorf("ProcessOrders after its rule resolved: %s, %q; want a trial, not a resume", ci.State, ci.Reason)
	}
	if ci := state("ImportPrices"); ci.State != circuit.ForcedOpen {
		t.Errorf("ImportPrices, tripped by a person, is %s after the rule resolved", ci.State)
	}
	// No failure for a whole window: the trial closes it, on its counts.
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		srv.Clock.Advance(5 * time.Second)
		ci := state("ProcessOrders")
		return ci.State == circuit.Closed, "ProcessOrders' trial is " + ci.State.String()
	})

	admin := newBrowser(t, srv.URL)
	admin.signIn("olivia")
	if page := admin.get("/alerts").body; strings.Count(page, `href="/circuits/orders-demo/ProcessOrders"`) != 2 {
		t.Error("the Alerts page does not say what each alert acted on")
	}
	// Closed after its trial: a retry of the Fired changes nothing.
	if again := postAlert(t, srv.URL, alertsSecret, fired); again.StatusCode != http.StatusOK {
		t.Errorf("the fired alert sent again: %d %s", again.StatusCode, again.body)
	}
	if ci := state("ProcessOrders"); ci.State != circuit.Closed {
		t.Errorf("a retry of the alert changed ProcessOrders to %s after its trial closed it", ci.State)
	}
}

// An action group's secure webhook is taken with its Entra ID token
// (the local provider standing in for the tenant): verified for signature,
// issuer, audience, tenant, life, app role and calling application before
// the body is read. A forged token, one for another audience or tenant,
// without the role, from another application of the tenant, or expired,
// is refused; forged tokens do not each cost a fetch of the
// tenant's keys; an alert sent again is kept once.
func TestASecureWebhooksTokenIsVerified(t *testing.T) {
	t.Parallel()
	const tenant = "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	var srv *apptest.Server
	provider := oidctest.Start(t, "", func() time.Time { return srv.Clock.Now() })
	forger := oidctest.Start(t, "", func() time.Time { return srv.Clock.Now() })
	srv = apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_TENANT": tenant, "FUSEBOX_AZURE_ALERTS_AUDIENCE": "api://fusebox-alerts",
		"FUSEBOX_AZURE_ALERTS_ISSUER": provider.URL, "FUSEBOX_AZURE_ALERTS_KEYS_URL": provider.URL + "/jwks", "FUSEBOX_AZURE_ALERTS_ROLE": "ActionGroupsSecureWebhook",
		"FUSEBOX_AZURE_ALERTS_APPID": azalerts.ActionGroupsAppID})
	today := srv.Clock.Now().UTC().Format("2006-01-02")
	b, err := os.ReadFile("../azalerts/testdata/resourcehealth.json")
	if err != nil {
		t.Fatal(err)
	}
	alert := strings.ReplaceAll(string(b), "2026-12-07T", today+"T")
	claims := func(change func(map[string]any)) map[string]any {
		now := srv.Clock.Now()
		c := map[string]any{"iss": provider.URL, "aud": "api://fusebox-alerts", "tid": tenant, "roles": []any{"ActionGroupsSecureWebhook"},
			"appid": azalerts.ActionGroupsAppID, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	send := func(token string) response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/azure-monitor", strings.NewReader(alert))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return newBrowser(t, srv.URL).do(req)
	}
	wantStatus(t, send(provider.Mint(claims(nil))), http.StatusAccepted)
	if again := send(provider.Mint(claims(nil))); again.StatusCode != http.StatusOK || !strings.Contains(again.body, "received already") {
		t.Errorf("the same alert sent again: %d %s", again.StatusCode, again.body)
	}
	for name, token := range map[string]string{
		"forged (another key)":                     forger.Mint(claims(nil)),
		"for another audience":                     provider.Mint(claims(func(c map[string]any) { c["aud"] = "api://something-else" })),
		"of another tenant":                        provider.Mint(claims(func(c map[string]any) { c["tid"] = "00000000-0000-0000-0000-000000000000" })),
		"from another issuer":                      provider.Mint(claims(func(c map[string]any) { c["iss"] = "https://sts.windows.net/" + tenant + "/" })),
		"without the app role":                     provider.Mint(claims(func(c map[string]any) { delete(c, "roles") })),
		"from another application (with the role)": provider.Mint(claims(func(c map[string]any) { c["appid"] = "0f0e0d0c-0b0a-0908-0706-050403020100" })),
		"expired":     provider.Mint(claims(func(c map[string]any) { c["exp"] = srv.Clock.Now().Add(-time.Minute).Unix() })),
		"none":        "",
		"not a token": "x.y.z",
	} {
		if got := send(token); got.StatusCode != http.StatusUnauthorized {
			t.Errorf("a token %s: %d %s", name, got.StatusCode, got.body)
		}
	}
	before := provider.Keys()
	for range 20 {
		send(forger.Mint(claims(nil)))
	}
	if fetched := provider.Keys() - before; fetched > 1 {
		t.Errorf("20 forged tokens fetched the tenant's keys %d times; at most once a minute", fetched)
	}
	admin := newBrowser(t, srv.URL)
	admin.signIn("olivia")
	page := admin.get("/alerts").body
	if strings.Count(page, `data-testid="alert-row"`) != 1 || !strings.Contains(page, "inventory-db-health") {
		t.Errorf("the Alerts page does not show the one alert taken")
	}
	if strings.Contains(page, `data-testid="alerts-off"`) {
		t.Error("the Alerts page says no webhook is configured, though the secure webhook is")
	}
}

// The alert journey on the real clock: the rule fires and the circuit's
// trigger goes off; the rule resolves and the trigger comes back on for a
// trial, which the circuit's own counts close after a whole quiet window,
// not before it.
func TestAnAlertTripsAndItsResolveTriesOnTheRealClock(t *testing.T) {
	t.Parallel()
	srv := apptest.StartRealClock(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret})
	ctx := t.Context()
	st := srv.App.Store
	if err := demo.Seed(ctx, st, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	const window = 3 * time.Second
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: demo.AppID, Function: "ChargeCards", Settings: circuit.Settings{Threshold: 10, Window: window,
		AlertRules: []string{demo.AlertRule}}, State: circuit.Closed, ChangedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	until := func(what string, ok func(circuit.Circuit) bool) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			c, err := st.Circuits.Get(ctx, demo.AppID, "ChargeCards")
			if err != nil {
				t.Fatal(err)
			}
			return ok(c), "ChargeCards is " + c.State.String() + ", not " + what
		})
	}
	id, fired := demo.NewAlertID(), time.Now()
	if status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Fired", fired, time.Time{})); err != nil || status != http.StatusAccepted {
		t.Fatalf("fired: %d %s %v", status, body, err)
	}
	until("off", func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() })
	if status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Resolved", fired, time.Now())); err != nil || status != http.StatusAccepted {
		t.Fatalf("resolved: %d %s %v", status, body, err)
	}
	until("on trial", func(c circuit.Circuit) bool { return c.State == circuit.HalfOpen && !c.Pending() })
	onTrial := time.Now()
	until("closed", func(c circuit.Circuit) bool { return c.State == circuit.Closed })
	took := time.Since(onTrial)
	t.Logf("the trial closed the circuit %s after the trigger came back on (window %s)", took.Round(100*time.Millisecond), window)
	if took < window-time.Second {
		t.Errorf("the trial closed after %s: before a whole window of %s", took, window)
	}
}

// Azure Monitor's published samples carry no alertRuleID (and the alerts
// action groups send need not either): the rule is found by what the alert
// says of it. The metric sample trips the circuit naming its rule by name
// in its subscription and resource group, and not a circuit naming a rule
// of that name in another group; the activity log sample fits two rules of
// its name in its subscription, so it trips neither. Each answer, and the
// Alerts page, says what the alert matched or why it matched nothing. The
// samples are as published, moved to the test clock's day (alerts older
// than 31 days are refused); both bear the same alert id, so each is sent
// to a Fusebox of its own.
func TestAnAlertWithoutARuleIDTripsTheOneRuleItNames(t *testing.T) {
	t.Parallel()
	const sub = "/subscriptions/11111111-1111-1111-1111-111111111111"
	metricRule := sub + "/resourceGroups/test-RG/providers/Microsoft.Insights/metricAlerts/test-metricAlertRule"
	activityRule := sub + "/resourceGroups/test-RG/providers/microsoft.insights/activityLogAlerts/test-activityLogAlertRule"
	other := func(rule string) string { return strings.Replace(rule, "test-RG", "other-RG", 1) }

	t.Run("the one rule it fits", func(t *testing.T) {
		t.Parallel()
		f := startNaming(t, map[string]string{"Ingest": metricRule, "Elsewhere": other(metricRule)})
		got := f.post("test-action-metric-static.json", "2021-11-15")
		wantNote := "carries no rule id: matched " + metricRule + " by its name, subscription, resource group and type"
		if len(got.ActedOn) != 1 || got.ActedOn[0] != demo.AppID+"/Ingest" || got.Matched != metricRule || got.Note != wantNote {
			t.Errorf("the metric sample: %+v; want Ingest acted on, matched %s saying %q", got, metricRule, wantNote)
		}
		if s := f.state("Ingest"); !s.TriggerOff() {
			t.Errorf("Ingest, naming the sample's rule, is %s after it fired", s)
		}
		if s := f.state("Elsewhere"); s != circuit.Closed {
			t.Errorf("Elsewhere, naming a rule of that name in another resource group, is %s", s)
		}
		f.shows(wantNote, `"matched_rule":"`+metricRule+`"`)
	})
	t.Run("two rules it fits", func(t *testing.T) {
		t.Parallel()
		f := startNaming(t, map[string]string{"Restart": activityRule, "Reboot": other(activityRule)})
		got := f.post("test-action-activity-log-administrative.json", "2021-11-16")
		wantNote := "matches more than one rule: " + other(activityRule) + ", " + activityRule + "; acted on none"
		if len(got.ActedOn) != 0 || got.Matched != "" || !strings.HasPrefix(got.Note, wantNote) {
			t.Errorf("the activity log sample: %+v; want nothing acted on, saying %q…", got, wantNote)
		}
		if a, b := f.state("Restart"), f.state("Reboot"); a != circuit.Closed || b != circuit.Closed {
			t.Errorf("the two circuits naming a rule of the alert's name: %s and %s, want both closed", a, b)
		}
		f.shows(wantNote, `"note":"`+wantNote)
	})
}

// namingFusebox is a Fusebox whose demo app has circuits naming rules.
type namingFusebox struct {
	t   *testing.T
	srv *apptest.Server
}

// startNaming starts a Fusebox taking alerts, with the demo seeded and a
// closed circuit of the demo app for each function, naming its rule.
func startNaming(t *testing.T, rules map[string]string) namingFusebox {
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": alertsSecret})
	st := srv.App.Store
	if err := demo.Seed(t.Context(), st, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	for fn, rule := range rules {
		if err := st.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: fn, State: circuit.Closed, ChangedAt: srv.Clock.Now(),
			Settings: circuit.Settings{Threshold: 10, Window: time.Minute, AlertRules: []string{rule}}}); err != nil {
			t.Fatal(err)
		}
	}
	return namingFusebox{t: t, srv: srv}
}

type alertAnswer struct {
	ActedOn []string `json:"acted_on"`
	Matched string   `json:"matched_rule"`
	Note    string   `json:"note"`
}

// post sends a published sample, moved from the day it fired to the test
// clock's, and reads the answer.
func (f namingFusebox) post(file, day string) alertAnswer {
	f.t.Helper()
	b, err := os.ReadFile("../azalerts/testdata/published/" + file)
	if err != nil {
		f.t.Fatal(err)
	}
	today := f.srv.Clock.Now().UTC().Format("2006-01-02")
	r := postAlert(f.t, f.srv.URL, alertsSecret, strings.ReplaceAll(string(b), day+"T", today+"T"))
	wantStatus(f.t, r, http.StatusAccepted)
	var a alertAnswer
	if err := json.Unmarshal([]byte(r.body), &a); err != nil {
		f.t.Fatalf("the answer %s: %v", r.body, err)
	}
	return a
}

func (f namingFusebox) state(fn string) circuit.State {
	f.t.Helper()
	c, err := f.srv.App.Store.Circuits.Get(f.t.Context(), demo.AppID, fn)
	if err != nil {
		f.t.Fatal(err)
	}
	return c.State
}

// shows checks the Alerts page says note of the one alert, and the API
// says api.
func (f namingFusebox) shows(note, api string) {
	f.t.Helper()
	admin := newBrowser(f.t, f.srv.URL)
	admin.signIn("olivia")
	if page := admin.get("/alerts").body; strings.Count(page, `data-testid="alert-note"`) != 1 || !strings.Contains(page, note) {
		f.t.Errorf("the Alerts page does not say %q:\n%.4000s", note, page)
	}
	r := admin.get("/api/v1/alerts", "Accept", "application/json")
	wantStatus(f.t, r, http.StatusOK)
	if !strings.Contains(r.body, api) {
		f.t.Errorf("GET /api/v1/alerts does not say %s:\n%.3000s", api, r.body)
	}
}
