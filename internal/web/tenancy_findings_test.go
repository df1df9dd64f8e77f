package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/auth/oidctest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
)

// TestTheReviewsFindingsAreRefused walks the tenancy review's findings as
// billing's operator (and a person of no team) would: each was confirmed
// by running it before, and each fails without its mend.
func TestTheReviewsFindingsAreRefused(t *testing.T) {
	t.Parallel()
	var srv *apptest.Server
	provider := oidctest.Start(t, "", func() time.Time { return srv.Clock.Now() })
	provider.SetUser(oidctest.User{Subject: "u-9", Name: "Nobody", Claims: map[string]any{"groups": []any{"g-unknown"}}})
	srv = apptest.Start(t, map[string]string{
		"FUSEBOX_LOCAL_USERS": strings.Join([]string{apptest.User(t, "olivia", "admin"), apptest.User(t, "bianca", "operator@billing"),
			apptest.User(t, "vince", "viewer@orders+operator@billing")}, ","),
		"FUSEBOX_OIDC_ISSUER": provider.URL, "FUSEBOX_OIDC_CLIENT_ID": provider.ClientID, "FUSEBOX_OIDC_CLIENT_SECRET": provider.ClientSecret,
		"FUSEBOX_TEAM_MEMBERS": "billing:operator:g-billing-ops",
	})
	provider.SetRedirectURI(srv.URL + "/auth/oidc/callback")
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedChannels(ctx, srv.App.Store, "http://127.0.0.1:9", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Channels.Create(ctx, alerts.Channel{ID: "company-pager", Name: "Company pager", Kind: alerts.ChannelMail,
		Addresses: []string{"pager@example.com"}, CreatedAt: srv.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	_, billingToken := issued(t, srv, "billing-ci", demo.TeamBilling, auth.RoleOperator)
	_, adminToken := issued(t, srv, "admin-ci", "", auth.RoleAdmin)
	b := newBrowser(t, srv.URL)
	api := func(token, method, path string, body any) response {
		t.Helper()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(string(data)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		return b.do(req)
	}

	// orders' app moves to billing: orders' downstream no longer switches
	// its member, and says so.
	if err := srv.App.Store.Apps.SetTeam(ctx, demo.AppID, demo.TeamBilling); err != nil {
		t.Fatal(err)
	}
	r := api(adminToken, "POST", "/api/v1/downstreams/"+demo.Store+"/trip", map[string]any{"reason": "store down"})
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, "its app is of another team now: skipped") {
		t.Errorf("the downstream's answer does not name the member that left: %s", r.body)
	}
	c, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	if c.State.TriggerOff() {
		t.Errorf("orders' downstream switched off ProcessOrders, now billing's: %s", c.State)
	}
	if err := srv.App.Store.Apps.SetTeam(ctx, demo.AppID, demo.TeamOrders); err != nil {
		t.Fatal(err)
	}

	// orders' circuit is tripped with a reason only orders may read.
	const secret = "inventory creds rotated by hand"
	wantStatus(t, api(adminToken, "POST", "/api/v1/circuits/"+demo.AppID+"/ProcessOrders/trip", map[string]any{"reason": secret}), http.StatusOK)

	// A job named like orders' circuit, or like a team, shows billing
	// nothing of orders' audit entries.
	for _, name := range []string{demo.AppID + "/ProcessOrders", "team:orders"} {
		j := jobs.Fresh(srv.Clock.Now())
		j.Name, j.Schedule, j.Team = name, "0 2 * * *", demo.TeamBilling
		if err := srv.App.Store.Jobs.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	bianca := newBrowser(t, srv.URL)
	wantStatus(t, bianca.signIn("bianca"), http.StatusSeeOther)
	if page := bianca.get("/audit").body; strings.Contains(page, secret) {
		t.Error("billing's operator reads orders' trip reason on /audit through a job named like orders' circuit")
	}

	// A storm resume naming orders' circuit twice answers once, as a made
	// up one does: the count of answers tells nothing.
	count := func(ids ...string) int {
		t.Helper()
		r := api(billingToken, "POST", "/api/v1/circuits/resume", map[string]any{"circuits": ids, "reason": "x"})
		var out struct {
			Results []struct {
				Error string `json:"error"`
			} `json:"results"`
		}
		_ = json.Unmarshal([]byte(r.body), &out)
		return len(out.Results)
	}
	if theirs, madeUp := count(demo.AppID+"/ProcessOrders", demo.AppID+"/ProcessOrders"), count("nosuch/Thing", "nosuch/Thing"); theirs != madeUp {
		t.Errorf("orders' circuit named twice answers %d results, a made-up one %d", theirs, madeUp)
	}

	// A viewer of orders who operates billing may not resend orders'
	// notices.
	now := srv.Clock.Now()
	m := alerts.Message{Circuit: demo.AppID + "/ProcessOrders", Episode: 1, Kind: "opened", To: "oncall@example.com", State: alerts.Sent, CreatedAt: now, SentAt: now, NextAttempt: now}
	m.ID = alerts.MessageID(m.Circuit, m.Episode, m.Kind, m.To)
	if err := srv.App.Store.Outbox.Ensure(ctx, m); err != nil {
		t.Fatal(err)
	}
	id := m.ID
	vince := newBrowser(t, srv.URL)
	wantStatus(t, vince.signIn("vince"), http.StatusSeeOther)
	if r := vince.post("/notifications/resend", url.Values{"_csrf": {vince.csrf("/notifications")}, "id": {id}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("orders' viewer resending orders' notice: %d; want 403", r.StatusCode)
	}

	// A person of no team and no role sees no channel, shared or not.
	nobody := newBrowser(t, srv.URL)
	hop := nobody.get("/auth/oidc/login?next=/channels")
	at := nobody.do(mustRequest(t, hop.Header.Get("Location")))
	wantStatus(t, nobody.do(mustRequest(t, at.Header.Get("Location"))), http.StatusSeeOther)
	if page := nobody.get("/channels").body; strings.Contains(page, "pager@example.com") || strings.Contains(page, "Company pager") {
		t.Error("a person of no team sees the shared channel's address")
	}

	// Names are each team's own: billing's operator naming a downstream
	// or a channel as orders named theirs is answered as for any free
	// name, in billing's names; a name whose dot names orders is refused.
	if err := srv.App.Store.Apps.Create(ctx, circuit.App{ID: "billing-app", Team: demo.TeamBilling, Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/local.settings.json"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.Create(ctx, circuit.Circuit{AppID: "billing-app", Function: "Charge", Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	r = api(billingToken, "POST", "/api/v1/downstreams", map[string]any{"name": demo.Store, "members": []string{"billing-app/Charge"}, "quorum": 0})
	wantStatus(t, r, http.StatusCreated)
	if !strings.Contains(r.body, `"name":"billing.`+demo.Store+`"`) {
		t.Errorf("billing's downstream named as orders' is not named in billing's names: %s", r.body)
	}
	r = api(billingToken, "POST", "/api/v1/channels", map[string]any{"id": "demo-mail", "name": "Billing list", "kind": "mail", "addresses": []string{"billing@example.com"}})
	wantStatus(t, r, http.StatusCreated)
	if !strings.Contains(r.body, `"id":"billing.demo-mail"`) {
		t.Errorf("billing's channel named as orders' is not named in billing's names: %s", r.body)
	}
	for _, path := range []string{"/api/v1/downstreams", "/api/v1/channels"} {
		r = api(billingToken, "POST", path, map[string]any{"name": "orders.x", "id": "orders.x", "kind": "mail", "addresses": []string{"b@example.com"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(r.body, "begins with its team: billing.x") {
			t.Errorf("%s named orders.x by billing's operator: %s; want the refusal to say billing.x", path, r.body)
		}
	}
	r = api(adminToken, "PUT", "/api/v1/channels/billing.demo-mail", map[string]any{"name": "Billing list", "kind": "mail", "addresses": []string{"billing@example.com"}, "team": demo.TeamOrders})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(r.body, "names another team") {
		t.Errorf("billing.demo-mail moved to orders: %s; want it refused, its id naming billing", r.body)
	}
	if d, err := srv.App.Store.Downstreams.Get(ctx, demo.Store); err != nil || d.Team != demo.TeamOrders {
		t.Errorf("orders' downstream after billing's: %+v, %v", d, err)
	}
}
