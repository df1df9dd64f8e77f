package demo_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// The demo's alert on the orders store, posted as `fusebox-dev demo-alert`
// posts it: fired, it trips the orders-store downstream, which names its
// rule, and so its member ProcessOrders, in the downstream's episode;
// resolved (the store has no probe without the demo host), it puts
// ProcessOrders on trial.
func TestTheDemoAlertTripsAndTriesProcessOrders(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret})
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	state := func() circuit.Circuit {
		t.Helper()
		c, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	id, fired := demo.NewAlertID(), srv.Clock.Now()
	status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Fired", fired, time.Time{}))
	if err != nil || status != http.StatusAccepted || !strings.Contains(body, `"acted_on":["downstream:orders-store","orders-demo/ProcessOrders"]`) {
		t.Fatalf("fired: %d %s %v", status, body, err)
	}
	if c := state(); c.State != circuit.ForcedOpen || c.Downstream != demo.Store+"#1" {
		t.Errorf("after the demo alert fired ProcessOrders is %s, marked %q; want forced open by orders-store's episode 1", c.State, c.Downstream)
	}
	status, body, err = demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Resolved", fired, fired.Add(time.Minute)))
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("resolved: %d %s %v", status, body, err)
	}
	if c := state(); c.State != circuit.HalfOpen {
		t.Errorf("after the demo alert resolved ProcessOrders is %s, want on trial", c.State)
	}
}

// The demo host's page posts the orders store's alert to the secure
// webhook with a token the demo's tenant signs, and serves that tenant's
// keys: Fusebox, configured as `make run` configures it, verifies the
// token against them and trips the store's members. A token signed by
// another key (a restart that lost it) would not verify: the key is kept.
func TestTheDemoHostPostsTheAlertSignedAsATenant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	signer, err := demo.LoadAlertSigner(dir + "/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	alerts := &demo.HostAlerts{Signer: signer, State: demo.AlertState(dir + "/demo-alert"), Logger: slog.New(slog.DiscardHandler)}
	host := httptest.NewServer(&demo.Host{Alerts: alerts})
	t.Cleanup(host.Close)
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_TENANT": demo.AlertTenant, "FUSEBOX_AZURE_ALERTS_AUDIENCE": demo.AlertAudience,
		"FUSEBOX_AZURE_ALERTS_KEYS_URL": host.URL + demo.AlertKeysPath, "FUSEBOX_AZURE_ALERTS_ROLE": demo.AlertRole, "FUSEBOX_AZURE_ALERTS_APPID": azalerts.ActionGroupsAppID})
	alerts.Fusebox, alerts.Now = srv.URL, srv.Clock.Now
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, dir+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	press := func(path string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, host.URL+path, nil)
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s on the demo host: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	press("/alert/fired")
	c, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil || c.State != circuit.ForcedOpen || c.Downstream != demo.Store+"#1" || c.Reason != "downstream orders-store: alert rule orders-store-down fired: The orders store answers fewer than 90 % of requests" {
		t.Fatalf("after the page's alert fired, ProcessOrders is %s marked %q: %q (%v)", c.State, c.Downstream, c.Reason, err)
	}
	again, err := demo.LoadAlertSigner(dir + "/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	token, err := again.Token(srv.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	id, fired, err := alerts.State.Next("Resolved", srv.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	status, body, err := demo.PostSecureAlert(ctx, srv.URL, token, demo.AlertPayload(id, "Resolved", fired, srv.Clock.Now()))
	if err != nil || status != http.StatusAccepted || !strings.Contains(body, "downstream:orders-store") {
		t.Fatalf("resolved, signed by the key read again: %d %s %v", status, body, err)
	}
	if c, _ := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders"); c.State != circuit.HalfOpen {
		t.Errorf("after resolved ProcessOrders is %s, want on trial (the store has no probe without the live host)", c.State)
	}
}
