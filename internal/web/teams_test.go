package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
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
	"github.com/fusebox/fusebox/internal/teams"
)

// The demo's apps belong to team orders; team billing owns none of them.
// Users: oscar operates orders, vera views it, bianca operates billing,
// olivia is an admin.
func teamsServer(t *testing.T) (*apptest.Server, string) {
	t.Helper()
	adminToken, adminHash := auth.NewAPIToken()
	srv := apptest.Start(t, map[string]string{
		"FUSEBOX_LOCAL_USERS": strings.Join([]string{apptest.User(t, "olivia", "admin"), apptest.User(t, "oscar", "operator@orders"),
			apptest.User(t, "vera", "viewer@orders"), apptest.User(t, "bianca", "operator@billing")}, ","),
		"FUSEBOX_API_TOKENS": "bootstrap:operator:" + adminHash,
	})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedChannels(t.Context(), srv.App.Store, "http://127.0.0.1:9", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return srv, adminToken
}

// issued stores a token of team (empty: every app) with role.
func issued(t *testing.T, srv *apptest.Server, name, team string, role auth.Role) (id, token string) {
	t.Helper()
	id, token, hash := auth.NewIssuedToken()
	now := srv.Clock.Now()
	if err := srv.App.Store.Tokens.Insert(t.Context(), auth.IssuedToken{ID: id, Name: name, Role: role, Team: team, CreatedBy: "olivia",
		CreatedAt: now, Expires: now.Add(24 * time.Hour), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	return id, token
}

// caller is one way in: a signed-in browser or a bearer token.
type caller struct {
	name     string
	b        *browser
	csrf     string
	token    string
	member   bool // of orders, the team that owns what the routes name
	operates bool // orders' apps
	admin    bool
}

func (c caller) send(r route, path string) response {
	if c.token != "" {
		req, _ := http.NewRequest(r.method, c.b.base+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		return c.b.do(req)
	}
	if r.api() {
		req, _ := http.NewRequest(r.method, c.b.base+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-CSRF-Token", c.csrf)
		return c.b.do(req)
	}
	return c.b.send(r.method, path, url.Values{"_csrf": {c.csrf}}, "X-CSRF-Token", c.csrf)
}

// adminRoute says whether a route is Fusebox's own: teams, locks, and
// discovering what to guard.
func adminRoute(path string) bool {
	for _, p := range []string{"/locks", "/teams", "/apps/discover", "/api/v1/teams", "/alerts", "/api/v1/alerts"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// names says whether a route names something a team owns.
func names(path string) bool {
	return strings.Contains(path, ":app") || (strings.Contains(path, ":id") && !adminRoute(path))
}

// requestIDs and CSRF tokens differ in every answer.
var requestIDs = regexp.MustCompile(`"request_id":"[^"]*"|[A-Za-z0-9]{32}|name="_csrf" value="[^"]*"`)

// One table over every route × every kind of caller: a member of the
// app's team, a viewer of it, a member of another team, an admin, tokens
// of each kind, and nobody. Another team's things answer exactly as
// things that do not exist, are never listed or counted, and are left as
// they were; the app's own team and admins get what their role allows.
func TestEveryRouteShowsAndChangesOnlyWhatTheCallersTeamsOwn(t *testing.T) {
	t.Parallel()
	srv, adminToken := teamsServer(t)
	ctx := t.Context()
	store := srv.App.Store
	jobID := "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01" // Nightly sales summary, of orders-demo
	window := jobs.Window{ID: jobs.NewID(), AppID: demo.AppID, From: srv.Clock.Now(), Until: srv.Clock.Now().Add(time.Hour), Reason: "orders-window-reason", CreatedBy: "oscar"}
	if err := store.Jobs.PutWindow(ctx, window); err != nil {
		t.Fatal(err)
	}
	msg := alerts.Message{ID: alerts.MessageID(demo.AppID+"/SyncInventory", 3, "opened", "orders-oncall@example.com"), Circuit: demo.AppID + "/SyncInventory", Episode: 3, Kind: "opened", To: "orders-oncall@example.com",
		State: alerts.Sent, CreatedAt: srv.Clock.Now(), SentAt: srv.Clock.Now()}
	if err := store.Outbox.Ensure(ctx, msg); err != nil {
		t.Fatal(err)
	}
	victimID, _ := issued(t, srv, "orders-victim", "orders", auth.RoleViewer)
	_, ordersOp := issued(t, srv, "orders-ci", "orders", auth.RoleOperator)
	_, ordersView := issued(t, srv, "orders-dash", "orders", auth.RoleViewer)
	_, billingOp := issued(t, srv, "billing-ci", "billing", auth.RoleOperator)
	_, adminIssued := issued(t, srv, "platform", "", auth.RoleAdmin)

	fill := func(r route, madeUp bool) string {
		parts := strings.Split(r.path, "/")
		for i, p := range parts {
			switch p {
			case ":app":
				parts[i] = demo.AppID
				if madeUp {
					parts[i] = "no-such-app"
				}
			case ":function":
				parts[i] = "SyncInventory"
			case ":episode":
				parts[i] = "3"
			case ":queue":
				parts[i] = "orders-poison"
			case ":team":
				parts[i] = "orders"
			case ":id":
				switch {
				case strings.Contains(r.path, "/jobs/maintenance/") || strings.Contains(r.path, "/maintenance/"):
					parts[i] = window.ID
				case strings.Contains(r.path, "/jobs/"):
					parts[i] = jobID
				case strings.Contains(r.path, "/channels/"):
					parts[i] = "demo-teams"
				case strings.Contains(r.path, "/tokens/"):
					parts[i] = victimID
				case strings.Contains(r.path, "/downstreams/"):
					parts[i] = demo.Store
				}
				if madeUp {
					parts[i] = map[bool]string{true: "0123456789abcdef", false: jobs.NewID()}[strings.Contains(r.path, "/tokens/")]
					if strings.Contains(r.path, "/channels/") {
						parts[i] = "no-such-channel"
					}
					if strings.Contains(r.path, "/downstreams/") {
						parts[i] = "no-such-store"
					}
				}
			}
		}
		return strings.Join(parts, "/")
	}

	signed := func(name, user string, member, operates, admin bool) caller {
		b := newBrowser(t, srv.URL)
		token := b.csrf("/login")
		if user != "" {
			b.signIn(user)
			token = b.csrf("/")
		}
		return caller{name: name, b: b, csrf: token, member: member, operates: operates, admin: admin}
	}
	token := func(name, tok string, member, operates, admin bool) caller {
		return caller{name: name, b: newBrowser(t, srv.URL), token: tok, member: member, operates: operates, admin: admin}
	}
	others := []caller{signed("billing's operator", "bianca", false, false, false), token("billing's token", billingOp, false, false, false)}
	// Words that name orders' things; none may reach another team.
	secrets := []string{"orders-oncall@example.com", demo.AppID, "SyncInventory", "ProcessOrders", "Nightly sales summary", "demo-teams", "orders-window-reason", "orders-victim", "orders-ci", jobID, demo.Store}

	routes := routesOf(t, srv)
	before := teamSnapshot(t, srv)
	checked := 0
	for _, c := range others {
		for _, r := range routes {
			if _, open := openRoutes[r.String()]; open || (c.token != "" && !r.api()) {
				continue // tokens are for the API
			}
			got := c.send(r, fill(r, false))
			switch {
			case adminRoute(r.path):
				if got.StatusCode != http.StatusForbidden {
					t.Errorf("%s %s: %d, want 403: it is admins'", c.name, r, got.StatusCode)
				}
			case names(r.path):
				checked++
				none := c.send(r, fill(r, true))
				if got.StatusCode != http.StatusNotFound || got.StatusCode != none.StatusCode ||
					requestIDs.ReplaceAllString(got.body, "") != requestIDs.ReplaceAllString(none.body, "") {
					a, b := requestIDs.ReplaceAllString(got.body, ""), requestIDs.ReplaceAllString(none.body, "")
					i := 0
					for i < len(a) && i < len(b) && a[i] == b[i] {
						i++
					}
					t.Errorf("%s %s: %d; no such thing answers %d: they must be the same 404; they part at %q / %q", c.name, r, got.StatusCode, none.StatusCode, a[max(0, i-80):min(len(a), i+80)], b[max(0, i-80):min(len(b), i+80)])
				}
			default:
				for _, s := range secrets {
					if strings.Contains(got.body, s) {
						t.Errorf("%s %s (%d) shows %q, of another team", c.name, r, got.StatusCode, s)
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d routes that name something were checked", checked)
	}
	// What a body names: another team's app, circuit or message answers as
	// one that does not exist.
	bianca := others[0]
	for _, tc := range []struct{ method, path, mine, none string }{
		{http.MethodPost, "/api/v1/circuits", `{"app": "orders-demo", "function": "ShipParcels", "threshold": 5, "window_seconds": 60}`,
			`{"app": "no-such-app", "function": "ShipParcels", "threshold": 5, "window_seconds": 60}`},
		{http.MethodPost, "/api/v1/circuits/resume", `{"circuits": ["orders-demo/SyncInventory"], "reason": "x"}`, `{"circuits": ["no-such-app/SyncInventory"], "reason": "x"}`},
		{http.MethodPost, "/api/v1/maintenance", `{"app": "orders-demo", "duration": "30m", "reason": "x"}`, `{"app": "no-such-app", "duration": "30m", "reason": "x"}`},
		{http.MethodPost, "/api/v1/jobs", `{"name": "x", "schedule": "every 15m", "app": "orders-demo"}`, `{"name": "x", "schedule": "every 15m", "app": "no-such-app"}`},
		{http.MethodPost, "/api/v1/circuits", `{"app": "billing-x", "function": "F", "threshold": 5, "window_seconds": 60, "channels": ["demo-teams"]}`,
			`{"app": "billing-x", "function": "F", "threshold": 5, "window_seconds": 60, "channels": ["no-such-channel"]}`},
	} {
		send := func(body string) response {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			req.Header.Set("X-CSRF-Token", bianca.csrf)
			return bianca.b.do(req)
		}
		got, none := send(tc.mine), send(tc.none)
		a := strings.ReplaceAll(requestIDs.ReplaceAllString(got.body, ""), "orders-demo", "no-such-app")
		a = strings.ReplaceAll(a, "demo-teams", "no-such-channel")
		if got.StatusCode != none.StatusCode || a != requestIDs.ReplaceAllString(none.body, "") {
			t.Errorf("billing %s %s naming orders' things: %d %s; naming nothing: %d %s", tc.method, tc.path, got.StatusCode, got.body, none.StatusCode, none.body)
		}
	}
	resend := bianca.b.post("/notifications/resend", url.Values{"_csrf": {bianca.csrf}, "id": {msg.ID}})
	if resend.StatusCode != http.StatusNotFound {
		t.Errorf("billing resending orders' message: %d", resend.StatusCode)
	}
	if after := teamSnapshot(t, srv); after != before {
		t.Errorf("another team's calls changed orders' things:\nbefore %s\nafter  %s", before, after)
	}

	// The message billing could not resend, its own team can.
	oscar := signed("orders' operator", "oscar", true, true, false)
	if r := oscar.b.post("/notifications/resend", url.Values{"_csrf": {oscar.csrf}, "id": {msg.ID}}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("orders' operator resending its message: %d %.300s", r.StatusCode, r.body)
	}

	// The app's own team, and admins: what their role allows.
	own := []caller{
		signed("orders' viewer", "vera", true, false, false),
		token("orders' viewer token", ordersView, true, false, false),
		signed("orders' operator", "oscar", true, true, false),
		token("orders' operator token", ordersOp, true, true, false),
		signed("admin", "olivia", true, true, true),
		token("admin's issued token", adminIssued, true, true, true),
		token("the environment's token", adminToken, true, true, true),
	}
	for _, c := range own {
		for _, r := range routes {
			if _, open := openRoutes[r.String()]; open || (c.token != "" && !r.api()) {
				continue
			}
			operatorOnly := r.changes() || operatorPage(r.path)
			refused := adminRoute(r.path) && !c.admin || operatorOnly && !c.operates
			got := c.send(r, fill(r, false))
			if refused != (got.StatusCode == http.StatusForbidden) || got.StatusCode == http.StatusUnauthorized {
				t.Errorf("%s %s: %d %.200s; refused for the role: %v", c.name, r, got.StatusCode, got.body, refused)
			}
		}
	}

	// Nobody signed in gets nothing.
	nobody := signed("nobody", "", false, false, false)
	for _, r := range routes {
		if _, open := openRoutes[r.String()]; !open {
			if got := nobody.send(r, fill(r, false)); got.StatusCode != http.StatusUnauthorized && got.StatusCode != http.StatusSeeOther {
				t.Errorf("nobody %s: %d", r, got.StatusCode)
			}
		}
	}
}

// teamSnapshot is what orders owns, as storage has it.
func teamSnapshot(t *testing.T, srv *apptest.Server) string {
	t.Helper()
	ctx := t.Context()
	st := srv.App.Store
	var b strings.Builder
	apps, err := st.Apps.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		fmt.Fprintf(&b, "app %s %s %s %v; ", a.ID, a.Team, a.APIKeyHash, a.Channels)
	}
	cs, err := st.Circuits.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "circuit %s %s %d %d %+v; ", c.ID(), c.State, c.Episode, c.Threshold, c.Recipients)
	}
	js, err := st.Jobs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if !jobs.InternalID(j.ID) {
			fmt.Fprintf(&b, "job %s %s %s %v %s; ", j.ID, j.Name, j.Schedule, j.Paused, j.PingToken)
		}
	}
	chs, err := st.Channels.ListChannels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chs {
		fmt.Fprintf(&b, "channel %s %s %s; ", ch.ID, ch.Team, ch.Version)
	}
	ws, err := st.Jobs.Windows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		fmt.Fprintf(&b, "window %s %s; ", w.ID, w.Until)
	}
	msgs, err := st.Outbox.Recent(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Fprintf(&b, "message %s %s %d; ", m.ID, m.State, m.Attempts)
	}
	toks, err := st.Tokens.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(toks, func(a, b auth.IssuedToken) int { return strings.Compare(a.ID, b.ID) })
	for _, tk := range toks {
		fmt.Fprintf(&b, "token %s %s %v; ", tk.ID, tk.Team, tk.Revoked)
	}
	return b.String()
}

// Groups an identity provider sends map to teams, from the environment and
// from the Teams page: a member of billing's group sees billing's apps and
// nothing of orders'; once an admin maps another of their groups to orders
// as viewers, they see orders' circuits within the directory's bound, and
// still may not act on them.
func TestSingleSignOnGroupsMapToTeams(t *testing.T) {
	t.Parallel()
	var srv *apptest.Server
	provider := oidctest.Start(t, "", func() time.Time { return srv.Clock.Now() })
	provider.SetUser(oidctest.User{Subject: "u-7", Name: "Bea", Claims: map[string]any{"groups": []any{"g-billing-ops", "g-readers"}}})
	srv = apptest.Start(t, map[string]string{
		"FUSEBOX_OIDC_ISSUER": provider.URL, "FUSEBOX_OIDC_CLIENT_ID": provider.ClientID, "FUSEBOX_OIDC_CLIENT_SECRET": provider.ClientSecret,
		"FUSEBOX_TEAM_MEMBERS": "billing:operator:g-billing-ops",
	})
	provider.SetRedirectURI(srv.URL + "/auth/oidc/callback")
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Apps.Put(ctx, circuit.App{ID: "billing-app", Team: demo.TeamBilling, Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/b.json"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: "billing-app", Function: "ChargeCards", Settings: circuit.Settings{Threshold: 10, Window: time.Minute},
		State: circuit.Closed, ChangedAt: srv.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	bea := newBrowser(t, srv.URL)
	hop := bea.get("/auth/oidc/login?next=/circuits")
	atProvider := bea.do(mustRequest(t, hop.Header.Get("Location")))
	wantStatus(t, bea.do(mustRequest(t, atProvider.Header.Get("Location"))), http.StatusSeeOther)
	list := bea.get("/circuits").body
	if !strings.Contains(list, "Bea (operator of billing)") || !strings.Contains(list, "ChargeCards") || strings.Contains(list, "SyncInventory") {
		t.Fatalf("billing's member sees: signed in as billing's operator %v, ChargeCards %v, orders' SyncInventory %v",
			strings.Contains(list, "Bea (operator of billing)"), strings.Contains(list, "ChargeCards"), strings.Contains(list, "SyncInventory"))
	}
	wantStatus(t, bea.get("/circuits/"+demo.AppID+"/SyncInventory"), http.StatusNotFound)

	admin := newBrowser(t, srv.URL)
	admin.signIn("olivia")
	saved := admin.post("/teams/orders/edit", url.Values{"_csrf": {admin.csrf("/teams")}, "members": {"viewer g-readers"}, "app": {demo.AppID}})
	wantStatus(t, saved, http.StatusSeeOther)
	if page := admin.get("/teams").body; !strings.Contains(page, "g-readers") || !strings.Contains(page, "g-billing-ops") {
		t.Error("the Teams page does not list the member added and the one from the environment")
	}
	// This instance forgot its teams when the page saved; another reads
	// them again within teams.TTL, which the clock passes here too.
	srv.Clock.Advance(teams.TTL)
	if page := bea.get("/circuits/" + demo.AppID + "/SyncInventory"); page.StatusCode != http.StatusOK || strings.Contains(page.body, `data-testid="trip"`) {
		t.Errorf("orders' new viewer: %d, offered Trip %v", page.StatusCode, strings.Contains(page.body, `data-testid="trip"`))
	}
	trip := bea.post("/circuits/"+demo.AppID+"/SyncInventory/trip", url.Values{"_csrf": {bea.csrf("/circuits")}, "reason": {"x"}})
	if trip.StatusCode != http.StatusForbidden || !strings.Contains(trip.body, "operator role") {
		t.Errorf("orders' viewer tripping: %d", trip.StatusCode)
	}
}

// A team's operator is shown its own badge key, which counts its jobs
// alone: a tag another team's failing job shares does not turn it down.
func TestATeamsBadgeCountsItsOwnJobsAlone(t *testing.T) {
	t.Parallel()
	srv, _ := teamsServer(t)
	ctx := t.Context()
	st := srv.App.Store
	if err := st.Apps.Put(ctx, circuit.App{ID: "billing-app", Team: demo.TeamBilling, Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/b.json"}); err != nil {
		t.Fatal(err)
	}
	now := srv.Clock.Now()
	billingJob := jobs.Fresh(now)
	billingJob.ID, billingJob.Name, billingJob.AppID, billingJob.Schedule, billingJob.TimeZone, billingJob.Grace = jobs.NewID(), "Invoice run", "billing-app", "every 1h", "UTC", time.Minute
	billingJob.Tags, billingJob.Status, billingJob.LastRunAt = []string{"nightly"}, jobs.Up, now
	if err := st.Jobs.Put(ctx, billingJob); err != nil {
		t.Fatal(err)
	}
	missing, err := st.Jobs.Get(ctx, "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a02") // orders' Reminder mails, missing
	if err != nil {
		t.Fatal(err)
	}
	missing.Tags = []string{"nightly"}
	if err := st.Jobs.Put(ctx, missing); err != nil {
		t.Fatal(err)
	}
	bianca := newBrowser(t, srv.URL)
	bianca.signIn("bianca")
	page := bianca.get("/jobs").body
	if strings.Contains(page, "Reminder mails") || !strings.Contains(page, "Invoice run") {
		t.Fatal("billing's jobs page does not list billing's job alone")
	}
	m := regexp.MustCompile(`http://[^<\s]+(/badge/[A-Za-z0-9_-]+/)nightly\.svg`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("billing's operator is not shown its badge URL")
	}
	if badge := bianca.get(m[1] + "nightly.svg"); !strings.Contains(badge.body, "nightly: up") {
		t.Errorf("billing's nightly badge: %s; want up (orders' missing job is not billing's)", badge.body)
	}
	olivia := newBrowser(t, srv.URL)
	olivia.signIn("olivia")
	all := regexp.MustCompile(`http://[^<\s]+(/badge/[A-Za-z0-9_-]+/)nightly\.svg`).FindStringSubmatch(olivia.get("/jobs").body)
	if all == nil || all[1] == m[1] {
		t.Fatal("the admin is not shown a badge key of every job, apart from billing's")
	}
	if badge := olivia.get(all[1] + "nightly.svg"); !strings.Contains(badge.body, "nightly: down") {
		t.Errorf("every job's nightly badge: %s; want down", badge.body)
	}
}

// A member of a team that owns no app yet is told why every page is empty
// and who can change it; a member of a team with apps is not.
func TestATeamWithoutAppsSaysWhyItsPagesAreEmpty(t *testing.T) {
	t.Parallel()
	srv, _ := teamsServer(t)
	bianca := newBrowser(t, srv.URL)
	bianca.signIn("bianca")
	for _, path := range []string{"/", "/circuits", "/downstreams"} {
		if page := bianca.get(path).body; !strings.Contains(page, "Your team (billing) owns no app yet") {
			t.Errorf("%s does not say why billing's pages are empty:\n%s", path, section(page, "<main"))
		}
	}
	oscar := newBrowser(t, srv.URL)
	oscar.signIn("oscar")
	if page := oscar.get("/").body; strings.Contains(page, "owns no app yet") {
		t.Error("orders' operator, whose team owns orders-demo, is told his team owns no app")
	}
}
