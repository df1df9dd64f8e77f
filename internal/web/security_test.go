package web_test

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/web"
)

// openRoutes are the routes that need no sign-in, each with the reason.
// Every other route is for signed-in people or API tokens; the tests below
// walk the router's own list, so a new route is checked the day it is added.
var openRoutes = map[string]string{
	"GET /healthz":                      "probe",
	"GET /readyz":                       "probe",
	"GET /metrics":                      "scraper; its own bearer token when configured",
	"GET /static/*":                     "assets",
	"POST /api/v1/failures":             "function apps, with the app's ingest key",
	"POST /v1/traces":                   "function hosts' OpenTelemetry export, with the app's key",
	"POST /v1/logs":                     "the same",
	"POST /v1/metrics":                  "the same (accepted, not read)",
	"POST /otlp/v1/traces":              "the same, under the documented prefix",
	"POST /otlp/v1/logs":                "the same",
	"POST /otlp/v1/metrics":             "the same",
	"POST " + grpcTraces:                "the same over gRPC; a key that does not verify gets UNAUTHENTICATED",
	"POST " + grpcLogs:                  "the same",
	"POST " + grpcMetrics:               "the same",
	"GET /ping/:a":                      "jobs, with the job's ping id",
	"HEAD /ping/:a":                     "jobs",
	"POST /ping/:a":                     "jobs",
	"GET /ping/:a/:b":                   "jobs",
	"HEAD /ping/:a/:b":                  "jobs",
	"POST /ping/:a/:b":                  "jobs",
	"GET /ping/:a/:b/:c":                "jobs",
	"HEAD /ping/:a/:b/:c":               "jobs",
	"POST /ping/:a/:b/:c":               "jobs",
	"GET /badge/:key/:file":             "status badges behind an unguessable key",
	"POST /hooks/azure-monitor/:secret": "Azure Monitor's action groups, behind the secret in the path",
	"POST /hooks/azure-monitor":         "Azure Monitor's secure webhooks, with their Entra ID token",
	"GET /login":                        "sign-in",
	"POST /login":                       "sign-in (CSRF-checked)",
	"POST /logout":                      "sign-out (CSRF-checked)",
	"GET /auth/oidc/login":              "sign-in",
	"GET /auth/oidc/callback":           "sign-in",
	"GET /resume/:token":                "signed resume link; shows only",
	"POST /resume/:token":               "signed resume link (CSRF-checked)",
	"POST /resume/:token/acknowledge":   "signed resume link (CSRF-checked)",
	"GET /throttle/:token":              "signed apply link of a throttle asked about; shows only",
	"POST /throttle/:token":             "signed apply link (CSRF-checked)",
}

// The OTLP/gRPC methods, which answer in gRPC statuses.
const (
	grpcTraces  = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	grpcLogs    = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
	grpcMetrics = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
)

// machineRoutes take no cookies, so CSRF does not apply to them.
var machineRoutes = map[string]bool{"/api/v1/failures": true, "/hooks/azure-monitor/:secret": true, "/hooks/azure-monitor": true, "/ping/:a": true, "/ping/:a/:b": true, "/ping/:a/:b/:c": true,
	"/v1/traces": true, "/v1/logs": true, "/v1/metrics": true, "/otlp/v1/traces": true, "/otlp/v1/logs": true, "/otlp/v1/metrics": true,
	grpcTraces: true, grpcLogs: true, grpcMetrics: true}

// otlpRoute says whether a route takes OpenTelemetry exports, whose
// bodies have a limit of their own (web.OTLPMaxBytes).
func otlpRoute(path string) bool {
	return strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/otlp/") || strings.HasPrefix(path, "/opentelemetry.")
}

// operatorPages are the pages (GET) that only operators may open: forms and
// confirmations of changes. Viewers may open every other page.
func operatorPage(path string) bool {
	if path == "/tokens" || path == "/api/v1/tokens" {
		return true // who holds which token is operators' business
	}
	for _, suffix := range []string{"/new", "/edit", "/trip", "/resume", "/break", "/guard"} {
		if strings.HasSuffix(path, suffix) && !strings.HasPrefix(path, "/resume/") {
			return true
		}
	}
	return false
}

type route struct{ method, path string }

func (r route) String() string { return r.method + " " + r.path }

func (r route) changes() bool {
	return r.method != http.MethodGet && r.method != http.MethodHead
}

func (r route) api() bool { return strings.HasPrefix(r.path, "/api/") }

// url fills the route's parameters with values that name demo records, so
// that a request that got past the checks would act on something real.
func (r route) url() string {
	fill := map[string]string{":app": demo.AppID, ":function": "ProcessOrders", ":id": "00000000-0000-4000-8000-000000000001",
		":token": "x", ":key": "x", ":episode": "3", ":file": "x.svg", ":a": "x", ":b": "x", ":c": "x"}
	parts := strings.Split(r.path, "/")
	for i, p := range parts {
		if v, ok := fill[p]; ok {
			parts[i] = v
		} else if p == "*" {
			parts[i] = ""
		}
	}
	return strings.Join(parts, "/")
}

func routesOf(t *testing.T, srv *apptest.Server) []route {
	t.Helper()
	var rs []route
	seen := map[string]bool{}
	for _, r := range srv.App.Web.Routes() {
		rt := route{r.Method, r.Path}
		if r.Method == echo.RouteNotFound || seen[rt.String()] {
			continue
		}
		seen[rt.String()] = true
		rs = append(rs, rt)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].String() < rs[j].String() })
	if len(rs) < 60 {
		t.Fatalf("only %d routes listed; the router's list is not what this test expects", len(rs))
	}
	return rs
}

func (b *browser) send(method, path string, form url.Values, header ...string) response {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

const csrfRefusal = "did not come from Fusebox"

// Every route that changes state refuses a request without Fusebox's CSRF
// token for this browser, whoever is signed in.
func TestEveryChangeNeedsACSRFToken(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	olivia := newBrowser(t, srv.URL)
	olivia.signIn("olivia")
	other := newBrowser(t, srv.URL).csrf("/login") // a token, but another browser's
	checked := 0
	for _, r := range routesOf(t, srv) {
		if !r.changes() || machineRoutes[r.path] {
			continue
		}
		checked++
		for name, token := range map[string]string{"no token": "", "forged token": "forged", "another browser's token": other} {
			form := url.Values{}
			if token != "" {
				form.Set("_csrf", token)
			}
			got := olivia.send(r.method, r.url(), form)
			if got.StatusCode != http.StatusForbidden || !strings.Contains(got.body, csrfRefusal) {
				t.Errorf("%s with %s: status %d, want 403 for CSRF\n%.300s", r, name, got.StatusCode, got.body)
			}
			got = olivia.send(r.method, r.url(), url.Values{}, "X-CSRF-Token", token, "Accept", "application/json")
			if got.StatusCode != http.StatusForbidden {
				t.Errorf("%s with %s in the header: status %d, want 403", r, name, got.StatusCode)
			}
		}
	}
	if checked < 35 {
		t.Errorf("only %d state-changing routes checked", checked)
	}
}

// Every route that is not open refuses anonymous callers, even ones that
// send a forged Easy Auth header to a Fusebox that does not use Easy Auth;
// every operator route refuses viewers, by session and by API token, a
// configured one and one issued on the Tokens page alike.
func TestEveryRouteRefusesStrangersAndViewersWhereItShould(t *testing.T) {
	t.Parallel()
	viewToken, viewHash := auth.NewAPIToken()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_API_TOKENS": "dashboard:viewer:" + viewHash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	id, issuedView, hash := auth.NewIssuedToken()
	now := srv.Clock.Now()
	if err := srv.App.Store.Tokens.Insert(t.Context(), auth.IssuedToken{ID: id, Name: "nightly-report", Role: auth.RoleViewer, CreatedBy: "olivia",
		CreatedAt: now, Expires: now.Add(24 * time.Hour), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	stranger := newBrowser(t, srv.URL)
	strangerToken := stranger.csrf("/login")
	if login := stranger.get("/login").body; strings.Contains(login, `data-testid="version"`) {
		t.Error("the sign-in page shows the build to a stranger")
	}
	forged := easyAuthHeader("Fusebox.Operator")
	victor := newBrowser(t, srv.URL)
	victor.signIn("victor")
	victorToken := victor.csrf("/")

	for _, r := range routesOf(t, srv) {
		if _, open := openRoutes[r.String()]; open {
			continue
		}
		operatorOnly := r.changes() || operatorPage(r.path) || adminRoute(r.path)
		// The id these routes are sent is made up: it names nothing, which
		// answers 404 before any role is weighed (teams_test.go sends real ones).
		madeUp := strings.Contains(r.path, ":id") && !adminRoute(r.path)

		// Anonymous, with a valid CSRF token so that only sign-in is tested.
		got := stranger.send(r.method, r.url(), url.Values{"_csrf": {strangerToken}}, "X-CSRF-Token", strangerToken, "X-MS-CLIENT-PRINCIPAL", forged)
		switch {
		case r.api() || r.changes():
			if got.StatusCode != http.StatusUnauthorized {
				t.Errorf("anonymous %s: status %d, want 401", r, got.StatusCode)
			}
		default:
			if got.StatusCode != http.StatusSeeOther || !strings.HasPrefix(got.Header.Get("Location"), "/login") {
				t.Errorf("anonymous %s: status %d to %q, want 303 to sign-in", r, got.StatusCode, got.Header.Get("Location"))
			}
		}

		// A viewer's session.
		got = victor.send(r.method, r.url(), url.Values{"_csrf": {victorToken}}, "X-CSRF-Token", victorToken)
		refused := got.StatusCode == http.StatusForbidden && (strings.Contains(got.body, "operator role") || strings.Contains(got.body, "admin role")) ||
			madeUp && got.StatusCode == http.StatusNotFound
		if operatorOnly && !refused {
			t.Errorf("viewer's session %s: status %d, want 403 for the role\n%.300s", r, got.StatusCode, got.body)
		}
		if !operatorOnly && (got.StatusCode == http.StatusForbidden || got.StatusCode == http.StatusUnauthorized || got.StatusCode == http.StatusSeeOther) {
			t.Errorf("viewer's session %s: status %d, but viewers may see this", r, got.StatusCode)
		}

		// A viewer's API tokens, where the API takes tokens.
		for kind, token := range map[string]string{"configured": viewToken, "issued": issuedView} {
			if !r.api() {
				break
			}
			req, _ := http.NewRequest(r.method, srv.URL+r.url(), strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			got = stranger.do(req)
			if operatorOnly && got.StatusCode != http.StatusForbidden && !(madeUp && got.StatusCode == http.StatusNotFound) {
				t.Errorf("viewer's %s token %s: status %d, want 403", kind, r, got.StatusCode)
			}
			if !operatorOnly && got.StatusCode >= 400 && got.StatusCode != http.StatusNotFound {
				t.Errorf("viewer's %s token %s: status %d", kind, r, got.StatusCode)
			}
		}
	}
}

// Names typed by people or machines reach Table storage only as escaped
// OData literals: a quote in a path or query value finds nothing and
// breaks nothing.
func TestODataInjectionFindsNothing(t *testing.T) {
	t.Parallel()
	srv, op, _ := apiServer(t)
	if got := op.call(http.MethodGet, "/api/v1/circuits?app="+demo.AppID, ""); !strings.Contains(got.body, "ProcessOrders") {
		t.Fatalf("the app filter finds nothing even for the demo app:\n%.300s", got.body)
	}
	payloads := []string{
		"' or PartitionKey ne '",
		"x' or true or 'a' eq 'a",
		"ProcessOrders' or RowKey gt '",
		"%27%20or%20true",
		"a\x00b",
	}
	for _, p := range payloads {
		e := url.PathEscape(p)
		for _, path := range []string{
			"/api/v1/circuits/" + demo.AppID + "/" + e,
			"/api/v1/circuits/" + e + "/ProcessOrders",
			"/api/v1/jobs/" + e,
			"/api/v1/jobs/" + e + "/runs",
			"/api/v1/jobs/" + e + "/flips",
			"/api/v1/jobs?tag=" + url.QueryEscape(p) + "&status=" + url.QueryEscape(p),
			"/api/v1/circuits?app=" + url.QueryEscape(p),
		} {
			got := op.call(http.MethodGet, path, "")
			if got.StatusCode >= 500 {
				t.Errorf("GET %s: status %d\n%s", path, got.StatusCode, got.body)
			}
			if got.StatusCode == http.StatusOK && (strings.Contains(got.body, "ProcessOrders") || strings.Contains(got.body, `"id":"`)) {
				t.Errorf("GET %s: found records through the payload\n%.400s", path, got.body)
			}
		}
		for _, path := range []string{"/ping/" + e, "/badge/" + e + "/x.svg", "/resume/" + e} {
			got := newBrowser(t, srv.URL).get(path)
			if got.StatusCode >= 500 || got.StatusCode == http.StatusOK && strings.Contains(got.body, "ProcessOrders") {
				t.Errorf("GET %s: status %d\n%.300s", path, got.StatusCode, got.body)
			}
		}
	}
}

// Every route that takes a body refuses one over the limit before reading
// it: 413, as JSON to machines and the API, and as a page to browsers. Pings are the
// exception, since a cut log must still count as a run (ping_test.go).
func TestEveryBodyIsLimited(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_MAX_BODY_BYTES": "2048"})
	big := strings.Repeat("x", 4096)
	checked := 0
	for _, r := range routesOf(t, srv) {
		if !r.changes() || strings.HasPrefix(r.path, "/ping/") {
			continue
		}
		checked++
		body := big
		if otlpRoute(r.path) {
			body = strings.Repeat("x", web.OTLPMaxBytes+1)
		}
		for accept, want := range map[string]string{"application/json": "application/json", "text/html": "text/html"} {
			if r.api() {
				want = "application/json" // the API answers in JSON whatever it is asked
			}
			req, _ := http.NewRequest(r.method, srv.URL+r.url(), strings.NewReader(body))
			if strings.HasPrefix(r.path, "/opentelemetry.") {
				// gRPC: the refusal is a status in the answer's headers.
				got := newBrowser(t, srv.URL).do(req)
				if got.Header.Get("Grpc-Status") != "8" {
					t.Errorf("%s with a body over the limit: grpc-status %q, want 8 (RESOURCE_EXHAUSTED)", r, got.Header.Get("Grpc-Status"))
				}
				continue
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Accept", accept)
			got := newBrowser(t, srv.URL).do(req)
			if got.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(got.Header.Get("Content-Type"), want) {
				t.Errorf("%s with a 4 KiB body, Accept %s: status %d, %s; want 413 as %s", r, accept, got.StatusCode, got.Header.Get("Content-Type"), want)
			}
		}
	}
	if checked < 35 {
		t.Errorf("only %d routes with bodies checked", checked)
	}
}
