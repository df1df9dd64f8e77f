package e2e_test

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestTheOrdersStoreJourney walks #57's journey in Chromium on the real
// clock: the orders store's alert fires; its members in two apps
// (orders-demo's ProcessOrders, shipping-demo's ReserveStock) go off in
// one episode, each in its own app's settings, and the on-call address
// gets one mail listing both; the alert resolves while the store's health
// endpoint still answers 503, and nothing comes back on; the store
// recovers, the probe answers well twice in a row, both go on trial, their
// own counts close them after a quiet window, and one more mail says so.
// The page shows each step as a person reads it.
func TestTheOrdersStoreJourney(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	env := map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret}
	maps.Copy(env, smtp.Env())
	srv := apptest.StartRealClock(t, env)
	ctx := t.Context()
	st := srv.App.Store
	orders, shipping := t.TempDir()+"/local.settings.json", t.TempDir()+"/local.settings.json"
	if err := demo.Seed(ctx, st, orders, time.Now()); err != nil {
		t.Fatal(err)
	}
	const window = 3 * time.Second
	if err := st.Apps.Put(ctx, circuit.App{ID: "shipping-demo", DisplayName: "Shipping (demo)", Switch: circuit.SwitchLocal, LocalSettings: shipping,
		APIKeyHash: auth.HashAppKey("fbx_shipping-demo_e2e-key"), Team: demo.TeamOrders}); err != nil {
		t.Fatal(err)
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "shipping-demo", Function: "ReserveStock", Settings: circuit.Settings{Threshold: 10, Window: window,
		Recipients: []string{"oncall@example.com"}}, State: circuit.Closed, ChangedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	process, err := st.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	process.Window = window
	if err := st.Circuits.UpdateSettings(ctx, process); err != nil {
		t.Fatal(err)
	}
	health, healthy := apptest.Health(t)
	store, err := st.Downstreams.Get(ctx, demo.Store)
	if err != nil {
		t.Fatal(err)
	}
	set := store
	set.Members, set.Quorum = []string{demo.AppID + "/ProcessOrders", "shipping-demo/ReserveStock"}, 2
	set.Probe = downstream.Probe{URL: health, Good: 2, Every: time.Second}
	if _, err := st.Downstreams.Update(ctx, store.Settled(set.WithDefaults())); err != nil {
		t.Fatal(err)
	}

	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	look := func(want string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			p.do(t, chromedp.Navigate(srv.URL+"/downstreams/"+demo.Store), chromedp.WaitVisible(chromedp.CSS(`[data-testid="downstream-state"]`)))
			got := p.text(t, `[data-testid="downstream-state"]`)
			return got == want, "the page says " + got + ", not " + want
		})
	}
	look("closed")
	members := func(state string) {
		t.Helper()
		for _, id := range []string{demo.AppID + "/ProcessOrders", "shipping-demo/ReserveStock"} {
			app, fn, _ := circuit.SplitID(id)
			srv.WaitCircuit(t, app, fn, state, func(c circuit.Circuit) bool { return c.State.String() == state && !c.Pending() })
		}
	}

	id, fired := demo.NewAlertID(), time.Now()
	if status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Fired", fired, time.Time{})); err != nil || status != http.StatusAccepted {
		t.Fatalf("fired: %d %s %v", status, body, err)
	}
	members("forced-open")
	t.Logf("both members off in their own apps %s after the alert", time.Since(fired).Round(time.Millisecond))
	for file, fn := range map[string]string{orders: "ProcessOrders", shipping: "ReserveStock"} {
		if off, err := localsettings.Disabled(file, fn); err != nil || !off {
			t.Errorf("%s's trigger is on in its app's settings (%v)", fn, err)
		}
	}
	look("open")
	if got := p.text(t, `[data-testid="members"]`); strings.Count(got, "forced-open") != 2 {
		t.Errorf("the page's members: %q", got)
	}
	mail, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "orders-store failed") }, 30*time.Second)
	if !ok {
		t.Fatalf("no mail about the orders store; got %v", smtp.Messages())
	}
	if !strings.Contains(mail.Text, "orders-demo/ProcessOrders") || !strings.Contains(mail.Text, "shipping-demo/ReserveStock") {
		t.Errorf("the one mail does not list both members:\n%s", mail.Text)
	}

	resolved := time.Now()
	if status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Resolved", fired, resolved)); err != nil || status != http.StatusAccepted {
		t.Fatalf("resolved: %d %s %v", status, body, err)
	}
	look("waiting for the probe")
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		p.do(t, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid="downstream-state"]`)))
		answers := p.text(t, "main")
		return strings.Count(answers, "bad 503") >= 2, "the page shows no two bad answers yet"
	})
	for _, id := range []string{demo.AppID + "/ProcessOrders", "shipping-demo/ReserveStock"} {
		app, fn, _ := circuit.SplitID(id)
		if c, _ := st.Circuits.Get(ctx, app, fn); c.State != circuit.ForcedOpen {
			t.Errorf("%s is %s while the store's probe answers 503", fn, c.State)
		}
	}

	healthy.Store(true)
	recovered := time.Now()
	members("closed")
	look("closed")
	t.Logf("closed %s after the store recovered (two good answers 1 s apart, then a quiet window of %s)", time.Since(recovered).Round(time.Millisecond), window)
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "orders-store: its 2 functions in 2 apps are back on")
	}, 30*time.Second); !ok {
		t.Fatalf("no mail that the members are back on; got %v", smtp.Messages())
	}
	var about []string
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, "ProcessOrders") || strings.Contains(m.Subject, "ReserveStock") || strings.Contains(m.Subject, "orders-store") {
			about = append(about, m.Subject)
		}
	}
	if len(about) != 2 {
		t.Errorf("mails about the store and its members: %q; want the store's two alone", about)
	}
	flips, err := st.Circuits.Flips(ctx, "shipping-demo", "ReserveStock", 5)
	if err != nil || len(flips) != 3 || flips[1].To != circuit.HalfOpen || flips[1].Actor != "probe" {
		t.Errorf("ReserveStock's flip log: %+v %v; want off, on trial by the probe, closed", flips, err)
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}
