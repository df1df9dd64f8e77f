package web_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
)

// shippingKey is the second app's report key.
const shippingKey = "fbx_shipping-demo_test-key-not-for-azure"

// secondApp registers shipping-demo, of the orders team, with circuits
// for functions, each with a window of window and the demo's recipient;
// its local switch writes settings.
func secondApp(t *testing.T, srv *apptest.Server, settings string, window time.Duration, functions ...string) {
	t.Helper()
	ctx := t.Context()
	st := srv.App.Store
	if err := st.Apps.Put(ctx, circuit.App{ID: "shipping-demo", DisplayName: "Shipping (demo)", Switch: circuit.SwitchLocal, LocalSettings: settings,
		APIKeyHash: auth.HashAppKey(shippingKey), Team: demo.TeamOrders}); err != nil {
		t.Fatal(err)
	}
	for _, fn := range functions {
		if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "shipping-demo", Function: fn, Settings: circuit.Settings{Threshold: 10, Window: window,
			Recipients: []string{"oncall@example.com"}}, State: circuit.Closed, ChangedAt: srv.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	ci, err := st.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.Window = window
	if err := st.Circuits.UpdateSettings(ctx, ci); err != nil {
		t.Fatal(err)
	}
}

// setStore makes the demo's orders-store span both apps.
func setStore(t *testing.T, srv *apptest.Server, quorum int, probe downstream.Probe, members ...string) {
	t.Helper()
	ctx := t.Context()
	d, err := srv.App.Store.Downstreams.Get(ctx, demo.Store)
	if err != nil {
		t.Fatal(err)
	}
	set := d
	set.Members, set.Quorum, set.Probe = members, quorum, probe
	if _, err := srv.App.Store.Downstreams.Update(ctx, d.Settled(set.WithDefaults())); err != nil {
		t.Fatal(err)
	}
}

func storeOf(t *testing.T, srv *apptest.Server) downstream.Downstream {
	t.Helper()
	d, err := srv.App.Store.Downstreams.Get(t.Context(), demo.Store)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func waitStore(t *testing.T, srv *apptest.Server, what string, ok func(downstream.Downstream) bool) downstream.Downstream {
	t.Helper()
	var d downstream.Downstream
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		d = storeOf(t, srv)
		return ok(d), fmt.Sprintf("orders-store is %s (episode %d, %d good in a row: %q), not %s", d.State, d.Episode, d.InARow, d.Reason, what)
	})
	return d
}

// probeServer is a health endpoint that answers 200 while good, else 503.
func probeServer(t *testing.T) (url string, good *atomic.Bool, calls *atomic.Int64) {
	t.Helper()
	good, calls = &atomic.Bool{}, &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		if !good.Load() {
			http.Error(w, "<script>the store is down</script>", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/health", good, calls
}

// One alert on the orders store trips its members in two apps in one
// episode, each through its own app's switch, and the on-call address
// both members name gets one mail listing both (not one per member).
// "Resolved" resumes nothing while the probe answers badly; three good
// answers in a row put both on trial; their own counts close them after a
// quiet window; the downstream closes, and one mail says so. The page
// shows the probe's answers, never what the server said.
func TestOneAlertTripsADownstreamsMembersAcrossAppsInOneEpisode(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	env := map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret}
	maps.Copy(env, smtp.Env())
	srv := apptest.Start(t, env)
	ctx := t.Context()
	orders, shipping := t.TempDir()+"/local.settings.json", t.TempDir()+"/local.settings.json"
	if err := demo.Seed(ctx, srv.App.Store, orders, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	secondApp(t, srv, shipping, 3*time.Second, "ReserveStock")
	probe, good, _ := probeServer(t)
	setStore(t, srv, 2, downstream.Probe{URL: probe, Good: 3, Every: time.Second}, demo.AppID+"/ProcessOrders", "shipping-demo/ReserveStock")
	stop := srv.RunFakeClock()
	defer stop()

	id, fired := demo.NewAlertID(), srv.Clock.Now()
	status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Fired", fired, time.Time{}))
	if err != nil || status != http.StatusAccepted || !strings.Contains(body, `"acted_on":["downstream:orders-store","orders-demo/ProcessOrders","shipping-demo/ReserveStock"]`) {
		t.Fatalf("fired: %d %s %v", status, body, err)
	}
	off := func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() }
	process := srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "off by the downstream", off)
	reserve := srv.WaitCircuit(t, "shipping-demo", "ReserveStock", "off by the downstream", off)
	if process.Downstream != "orders-store#1" || reserve.Downstream != "orders-store#1" {
		t.Errorf("the members' episodes are marked %q and %q; want both orders-store#1", process.Downstream, reserve.Downstream)
	}
	for file, fn := range map[string]string{orders: "ProcessOrders", shipping: "ReserveStock"} {
		if disabled, err := localsettings.Disabled(file, fn); err != nil || !disabled {
			t.Errorf("%s's trigger is not off in its own app's settings: %v", fn, err)
		}
	}
	opened, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "orders-store failed") }, 20*time.Second)
	if !ok {
		t.Fatalf("no mail about the orders store; got %v", smtp.Messages())
	}
	if opened.To != "oncall@example.com" || !strings.Contains(opened.Text, "orders-demo/ProcessOrders: forced-open") || !strings.Contains(opened.Text, "shipping-demo/ReserveStock: forced-open") ||
		!strings.Contains(opened.Subject, "2 functions in 2 apps") {
		t.Errorf("the mail does not list both members:\n%s\n%s", opened.Subject, opened.Text)
	}

	// Resolved while the store still fails: the probe is asked, and
	// nothing is resumed on Azure's word alone.
	status, body, err = demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Resolved", fired, srv.Clock.Now()))
	if err != nil || status != http.StatusAccepted || !strings.Contains(body, "downstream:orders-store") {
		t.Fatalf("resolved: %d %s %v", status, body, err)
	}
	waitStore(t, srv, "waiting, with bad answers", func(d downstream.Downstream) bool { return d.State == downstream.Waiting && len(d.Answers) >= 3 })
	for _, fn := range []string{"ProcessOrders", "ReserveStock"} {
		app := map[string]string{"ProcessOrders": demo.AppID, "ReserveStock": "shipping-demo"}[fn]
		if c, _ := srv.App.Store.Circuits.Get(ctx, app, fn); c.State != circuit.ForcedOpen {
			t.Errorf("%s is %s while the probe answers 503", fn, c.State)
		}
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/downstreams/" + demo.Store).body
	if !strings.Contains(page, "waiting for the probe") || !strings.Contains(page, "bad</span>  503") || strings.Contains(page, "the store is down") {
		t.Errorf("the page does not show the probe's answers (and only their status):\n%s", section(page, `data-testid="probe-answers"`))
	}

	good.Store(true)
	tried := waitStore(t, srv, "on trial", func(d downstream.Downstream) bool { return d.State == downstream.Trial })
	if tried.InARow != 3 || tried.Episode != 1 {
		t.Errorf("the trial began after %d good answers in a row, episode %d; want 3, episode 1", tried.InARow, tried.Episode)
	}
	closed := func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() }
	srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "closed after its trial", closed)
	srv.WaitCircuit(t, "shipping-demo", "ReserveStock", "closed after its trial", closed)
	waitStore(t, srv, "closed", func(d downstream.Downstream) bool { return d.State == downstream.Closed })
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "orders-store: its 2 functions in 2 apps are back on")
	}, 20*time.Second); !ok {
		t.Fatalf("no mail that the orders store's members are back on; got %v", smtp.Messages())
	}
	var about []string // the demo's other circuits are told of too
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, "ProcessOrders") || strings.Contains(m.Subject, "ReserveStock") || strings.Contains(m.Subject, "orders-store") {
			about = append(about, m.Subject)
		}
	}
	if len(about) != 2 {
		t.Errorf("mails about the store and its members: %q; want its two alone (opened, back on), none of a member on its own", about)
	}
}

// Members failing in one app trip no other; members of two apps failing
// trip every member, those not failing yet too, in one episode.
func TestADownstreamsQuorumCountsApps(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	ctx := t.Context()
	orders, shipping := t.TempDir()+"/local.settings.json", t.TempDir()+"/local.settings.json"
	if err := demo.Seed(ctx, srv.App.Store, orders, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	secondApp(t, srv, shipping, time.Minute, "ReserveStock", "PackParcels")
	setStore(t, srv, 2, downstream.Probe{}, demo.AppID+"/ProcessOrders", "shipping-demo/ReserveStock", "shipping-demo/PackParcels")
	report := func(key, function string, count int) {
		t.Helper()
		body := fmt.Sprintf(`{"failures":[{"function":%q,"at":%q,"count":%d}]}`, function, srv.Clock.Now().Add(-time.Second).Format(time.RFC3339), count)
		wantStatus(t, postJSON(t, srv.URL, key, body), http.StatusAccepted)
	}
	report(demo.Key, "ProcessOrders", 500)
	stop := srv.RunFakeClock()
	srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "open on its own counts", func(c circuit.Circuit) bool { return c.State == circuit.Open })
	testenv.Consistently(t, 3*time.Second, func() (bool, string) {
		c, err := srv.App.Store.Circuits.Get(ctx, "shipping-demo", "PackParcels")
		if err != nil {
			t.Fatal(err)
		}
		d := storeOf(t, srv)
		return c.State == circuit.Closed && d.State == downstream.Closed, fmt.Sprintf("one app failing: PackParcels is %s, the store %s (%s)", c.State, d.State, d.Reason)
	})
	stop()
	report(shippingKey, "ReserveStock", 20)
	stop = srv.RunFakeClock()
	defer stop()
	tripped := waitStore(t, srv, "open on its quorum", func(d downstream.Downstream) bool { return d.State == downstream.Open })
	if !strings.Contains(tripped.Reason, "members of 2 apps fail on their own (quorum 2)") || tripped.Actor != circuit.EvaluatorActor {
		t.Errorf("the trip says %q by %s", tripped.Reason, tripped.Actor)
	}
	pack := srv.WaitCircuit(t, "shipping-demo", "PackParcels", "off by the downstream", func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() })
	if pack.Downstream != "orders-store#1" {
		t.Errorf("PackParcels, not failing, went off marked %q; want orders-store#1", pack.Downstream)
	}
	if c, _ := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders"); c.State != circuit.Open || c.Downstream != "" {
		t.Errorf("ProcessOrders, open on its own counts, is %s marked %q: the downstream must leave it as it was", c.State, c.Downstream)
	}
}

// An operator names a downstream on the page from circuits of the team's
// apps; one naming another team's circuit, or a probe in the clear
// outside loopback, is refused by field; the page trips and resumes every
// member.
func TestAnOperatorNamesADownstreamAndActsOnIt(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_LOCAL_USERS": strings.Join([]string{apptest.User(t, "oscar", "operator@orders"), apptest.User(t, "bianca", "operator@billing")}, ",")})
	ctx := t.Context()
	orders, shipping := t.TempDir()+"/local.settings.json", t.TempDir()+"/local.settings.json"
	if err := demo.Seed(ctx, srv.App.Store, orders, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	secondApp(t, srv, shipping, time.Minute, "ReserveStock")
	oscar := newBrowser(t, srv.URL)
	oscar.signIn("oscar")
	form := url.Values{"_csrf": {oscar.csrf("/downstreams")}, "name": {"inventory-db"}, "members": {"orders-demo/SendReceipts\nshipping-demo/ReserveStock"}, "quorum": {"2"},
		"probe_url": {"http://inventory.example.com/health"}, "probe_good": {"3"}, "probe_every": {"10s"}}
	refused := oscar.post("/downstreams", form)
	if refused.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(refused.body, "must be an https:// URL") {
		t.Errorf("a probe in the clear: %d\n%s", refused.StatusCode, section(refused.body, `data-testid="downstream-form"`))
	}
	form.Set("probe_url", "https://inventory.example.com/health")
	wantStatus(t, oscar.post("/downstreams", form), http.StatusSeeOther)
	d, err := srv.App.Store.Downstreams.Get(ctx, "orders.inventory-db")
	if err != nil || d.Team != demo.TeamOrders || len(d.Members) != 2 {
		t.Fatalf("the saved downstream: %+v %v", d, err)
	}

	bianca := newBrowser(t, srv.URL)
	bianca.signIn("bianca")
	theirs := url.Values{"_csrf": {bianca.csrf("/downstreams")}, "name": {"billing-db"}, "members": {"orders-demo/SendReceipts"}, "quorum": {"0"}}
	if got := bianca.post("/downstreams", theirs); got.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(got.body, "is not a circuit of an app of billing you operate") {
		t.Errorf("billing naming orders' circuit: %d\n%s", got.StatusCode, section(got.body, `data-testid="downstream-form"`))
	}
	if got := bianca.get("/downstreams/orders.inventory-db"); got.StatusCode != http.StatusNotFound {
		t.Errorf("billing reads orders' downstream: %d", got.StatusCode)
	}

	csrf := oscar.csrf("/downstreams/orders.inventory-db")
	wantStatus(t, oscar.post("/downstreams/orders.inventory-db/trip", url.Values{"_csrf": {csrf}, "reason": {"failing over the inventory database"}}), http.StatusSeeOther)
	for app, fn := range map[string]string{demo.AppID: "SendReceipts", "shipping-demo": "ReserveStock"} {
		if c, _ := srv.App.Store.Circuits.Get(ctx, app, fn); c.State != circuit.ForcedOpen || c.Downstream != "orders.inventory-db#1" {
			t.Errorf("%s after the trip: %s marked %q", fn, c.State, c.Downstream)
		}
	}
	if got := oscar.post("/downstreams/orders.inventory-db/trip", url.Values{"_csrf": {csrf}, "reason": {"again"}}); got.StatusCode != http.StatusConflict {
		t.Errorf("a second trip: %d, want 409", got.StatusCode)
	}
	wantStatus(t, oscar.post("/downstreams/orders.inventory-db/resume", url.Values{"_csrf": {csrf}, "reason": {"failover done"}}), http.StatusSeeOther)
	for app, fn := range map[string]string{demo.AppID: "SendReceipts", "shipping-demo": "ReserveStock"} {
		if c, _ := srv.App.Store.Circuits.Get(ctx, app, fn); c.State != circuit.Closed {
			t.Errorf("%s after the resume: %s", fn, c.State)
		}
	}
	if d := storeNamed(t, srv, "orders.inventory-db"); d.State != downstream.Closed || d.Episode != 1 {
		t.Errorf("the downstream after the resume: %s, episode %d", d.State, d.Episode)
	}
}

func storeNamed(t *testing.T, srv *apptest.Server, name string) downstream.Downstream {
	t.Helper()
	d, err := srv.App.Store.Downstreams.Get(context.WithoutCancel(t.Context()), name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A downstream's pause window pauses every member, in two apps, as one
// episode told once, and when it ends each member resumes and the
// downstream closes, told once more.
func TestADownstreamsPauseWindowPausesEveryMemberAsOneEpisode(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	token, hash := auth.NewAPIToken()
	env := map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + hash}
	maps.Copy(env, smtp.Env())
	srv := apptest.Start(t, env)
	ctx := t.Context()
	orders, shipping := t.TempDir()+"/local.settings.json", t.TempDir()+"/local.settings.json"
	if err := demo.Seed(ctx, srv.App.Store, orders, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	secondApp(t, srv, shipping, time.Minute, "ReserveStock")
	opens := srv.Clock.Now().Truncate(time.Minute).Add(10 * time.Minute)
	window := opens.UTC().Format(time.RFC3339) + " for 30m"
	op := apiClient{t, newBrowser(t, srv.URL), token}
	body := fmt.Sprintf(`{"members": ["orders-demo/ProcessOrders", "shipping-demo/ReserveStock"], "quorum": 2, "alert_rules": [{"id": %q, "action": "trip"}], "channels": [], "recipients": [], "pause_windows": [%q]}`, demo.AlertRule, window)
	saved := op.call(http.MethodPut, "/api/v1/downstreams/"+demo.Store, body)
	if saved.StatusCode != http.StatusOK || !strings.Contains(saved.body, `"pause_windows":["`+window+`"]`) {
		t.Fatalf("the window saved: %d %s", saved.StatusCode, saved.body)
	}
	srv.Clock.Advance(opens.Sub(srv.Clock.Now()))
	stop := srv.RunFakeClock()
	paused := func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() }
	for app, fn := range map[string]string{demo.AppID: "ProcessOrders", "shipping-demo": "ReserveStock"} {
		c := srv.WaitCircuit(t, app, fn, "paused with the downstream", paused)
		if c.Downstream != "orders-store#1" || !c.PauseUntil.Equal(opens.Add(30*time.Minute)) {
			t.Errorf("%s: marked %q, until %s", fn, c.Downstream, c.PauseUntil)
		}
	}
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "orders-store paused: 2 functions in 2 apps")
	}, 20*time.Second); !ok {
		t.Fatalf("no mail of the pause; got %v", smtp.Messages())
	}
	stop()
	srv.Clock.Advance(opens.Add(30 * time.Minute).Sub(srv.Clock.Now()))
	stop = srv.RunFakeClock()
	defer stop()
	closed := func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() }
	srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "resumed when the window ended", closed)
	srv.WaitCircuit(t, "shipping-demo", "ReserveStock", "resumed when the window ended", closed)
	waitStore(t, srv, "closed", func(d downstream.Downstream) bool { return d.State == downstream.Closed })
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "orders-store: its 2 functions in 2 apps are back on")
	}, 20*time.Second); !ok {
		t.Fatalf("no mail that the members are back on; got %v", smtp.Messages())
	}
	var about []string
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, "ProcessOrders") || strings.Contains(m.Subject, "ReserveStock") || strings.Contains(m.Subject, "orders-store") {
			about = append(about, m.Subject)
		}
	}
	if len(about) != 2 {
		t.Errorf("mails of the pause: %q; want the store's two alone", about)
	}
}

// An hour before a downstream's pause window opens, when a member's hub
// keeps events less long than the window, every destination is warned
// once, naming that member.
func TestADownstreamsPauseWindowIsWarnedOfBeforeItOpens(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.Start(t, smtp.Env())
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.EventHub, ci.HubRetention = "orders", time.Hour
	if err := srv.App.Store.Circuits.UpdateSettings(ctx, ci); err != nil {
		t.Fatal(err)
	}
	opens := srv.Clock.Now().Truncate(time.Minute).Add(2 * time.Hour)
	window, err := circuit.ParsePauseWindow(opens.UTC().Format(time.RFC3339) + " for 2h")
	if err != nil {
		t.Fatal(err)
	}
	d := storeOf(t, srv)
	set := d
	set.PauseWindows = []circuit.PauseWindow{window}
	if _, err := srv.App.Store.Downstreams.Update(ctx, d.Settled(set)); err != nil {
		t.Fatal(err)
	}
	stop := srv.RunFakeClock()
	testenv.Consistently(t, 2*time.Second, func() (bool, string) {
		for _, m := range smtp.Messages() {
			if strings.Contains(m.Subject, "orders-store pauses at") {
				return false, "warned two hours ahead: " + m.Subject
			}
		}
		return true, ""
	})
	stop()
	srv.Clock.Advance(opens.Add(-50 * time.Minute).Sub(srv.Clock.Now()))
	stop = srv.RunFakeClock()
	defer stop()
	warning, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "orders-store pauses at") }, 20*time.Second)
	if !ok {
		t.Fatalf("no warning within the hour; got %v", smtp.Messages())
	}
	if !strings.Contains(warning.Text, "orders-demo/ProcessOrders: its hub keeps events 1h") || warning.To != "oncall@example.com" {
		t.Errorf("the warning:\n%s\n%s", warning.Subject, warning.Text)
	}
}

// A downstream naming a rule "throttle" lowers its members' concurrency
// when it fires (those with a throttle stage), each in its own app's
// settings, and tells each destination once that they were throttled
// together; the members' own throttle notices give way.
func TestADownstreamsThrottleRuleThrottlesItsMembersTellingOnce(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	env := map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret}
	maps.Copy(env, smtp.Env())
	srv := apptest.Start(t, env)
	ctx := t.Context()
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(ctx, srv.App.Store, settings, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedThrottle(ctx, srv.App.Store, settings); err != nil {
		t.Fatal(err)
	}
	d := storeOf(t, srv)
	set := d
	set.Rules = []downstream.Rule{{ID: demo.AlertRule, Action: downstream.ActionThrottle}}
	if _, err := srv.App.Store.Downstreams.Update(ctx, d.Settled(set)); err != nil {
		t.Fatal(err)
	}
	stop := srv.RunFakeClock()
	defer stop()
	status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(demo.NewAlertID(), "Fired", srv.Clock.Now(), time.Time{}))
	if err != nil || status != http.StatusAccepted || !strings.Contains(body, `"downstream:orders-store","orders-demo/ProcessOrders"`) {
		t.Fatalf("fired: %d %s %v", status, body, err)
	}
	c := srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "throttled and applied", func(c circuit.Circuit) bool { return c.State == circuit.Throttled && !c.Pending() })
	if want := storeOf(t, srv).Mark(); c.Downstream != want {
		t.Errorf("ProcessOrders' throttle is marked %q, want the store's %q (its own notices give way)", c.Downstream, want)
	}
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "orders-store: 1 function in 1 app throttled together")
	}, 20*time.Second); !ok {
		t.Fatalf("no mail of the throttle; got %v", smtp.Messages())
	}
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, "ProcessOrders throttled") {
			t.Errorf("the member was told of on its own too: %s", m.Subject)
		}
	}
}

// A trial stored while a member is still off by the downstream (the
// keeper puts members on trial one by one after storing it; an instance
// may stop between) is no failed trial: the downstream waits, puts the
// member on trial again after a while, and closes when every member has.
// Before, the next pass read the member as failing its trial and opened
// the downstream again while its members went on and closed.
func TestATrialThatHasNotReachedAMemberYetIsNotAFailure(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	secondApp(t, srv, t.TempDir()+"/local.settings.json", 5*time.Second, "ReserveStock")
	setStore(t, srv, 0, downstream.Probe{}, demo.AppID+"/ProcessOrders", "shipping-demo/ReserveStock")
	olivia := newBrowser(t, srv.URL)
	olivia.signIn("olivia")
	page := "/downstreams/" + demo.Store
	wantStatus(t, olivia.post(page+"/trip", url.Values{"_csrf": {olivia.csrf(page)}, "reason": {"failing over"}}), http.StatusSeeOther)
	srv.WaitCircuit(t, "shipping-demo", "ReserveStock", "off by the downstream", func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() })
	// The trial as stored before it reached any member.
	d := storeOf(t, srv)
	d.State, d.ChangedAt, d.Actor, d.Reason = downstream.Trial, srv.Clock.Now(), "Azure Monitor", "alert rule resolved"
	if _, err := srv.App.Store.Downstreams.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	stop := srv.RunFakeClock()
	defer stop()
	for _, fn := range []string{"ProcessOrders", "ReserveStock"} {
		app := demo.AppID
		if fn == "ReserveStock" {
			app = "shipping-demo"
		}
		srv.WaitCircuit(t, app, fn, "closed after the trial reached it", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })
	}
	closed := waitStore(t, srv, "closed", func(d downstream.Downstream) bool { return d.State != downstream.Trial })
	if closed.State != downstream.Closed || closed.Episode != 1 {
		t.Errorf("the downstream after its members' trials: %s (%s), episode %d; want closed", closed.State, closed.Reason, closed.Episode)
	}
}
