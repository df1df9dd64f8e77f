package web_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth/oidctest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// browser is an HTTP client with cookies that does not follow redirects,
// so tests see each hop.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, client: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type response struct {
	*http.Response
	body string
}

func (b *browser) do(req *http.Request) response {
	b.t.Helper()
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "text/html")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{resp, string(data)}
}

func (b *browser) get(path string, header ...string) response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

func (b *browser) post(path string, form url.Values, header ...string) response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (b *browser) csrf(path string) string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(b.get(path).body)
	if m == nil {
		b.t.Fatalf("no CSRF field on %s", path)
	}
	return m[1]
}

func (b *browser) signIn(user string) response {
	b.t.Helper()
	return b.post("/login", url.Values{"_csrf": {b.csrf("/login")}, "username": {user}, "password": {apptest.Password}, "next": {"/"}})
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d\n%s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
}

func TestProbesAndMetricsAreOpen(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	b := newBrowser(t, srv.URL)
	wantStatus(t, b.get("/healthz"), http.StatusOK)
	r := b.get("/readyz")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, `"ready"`) {
		t.Errorf("readyz body %s", r.body)
	}
	b.get("/login")
	m := b.get("/metrics")
	wantStatus(t, m, http.StatusOK)
	for _, want := range []string{
		`fusebox_http_requests_total{code="200",method="GET",route="/login"} 1`,
		`fusebox_storage_calls_total{op="get",outcome="ok"}`,
		`fusebox_storage_call_duration_seconds_bucket`,
		`go_goroutines`,
	} {
		if !strings.Contains(m.body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestMetricsTokenWhenConfigured(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_METRICS_TOKEN": "metrics-token-0123456789"})
	b := newBrowser(t, srv.URL)
	wantStatus(t, b.get("/metrics", "Accept", "text/plain"), http.StatusUnauthorized)
	wantStatus(t, b.get("/metrics", "Authorization", "Bearer wrong-token-0123456789"), http.StatusUnauthorized)
	wantStatus(t, b.get("/metrics", "Authorization", "Bearer metrics-token-0123456789"), http.StatusOK)
}

func TestReadyzFailsUntilMigrated(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_MIGRATE_ON_START": "false"})
	b := newBrowser(t, srv.URL)
	r := b.get("/readyz")
	wantStatus(t, r, http.StatusServiceUnavailable)
	if !strings.Contains(r.body, "run fusebox migrate") {
		t.Errorf("readyz does not say what to do: %s", r.body)
	}
	wantStatus(t, b.get("/healthz"), http.StatusOK)
}

func TestAnonymousVisitorsAreSentToSignIn(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	b := newBrowser(t, srv.URL)
	for _, path := range []string{"/", "/circuits", "/jobs", "/locks", "/audit"} {
		r := b.get(path)
		wantStatus(t, r, http.StatusSeeOther)
		if loc := r.Header.Get("Location"); loc != "/login?next="+url.QueryEscape(path) {
			t.Errorf("%s redirects to %q", path, loc)
		}
	}
	// Anonymous callers learn nothing about which paths exist.
	api := b.get("/api/v1/circuits", "Accept", "application/json")
	wantStatus(t, api, http.StatusUnauthorized)
	var body map[string]string
	if err := json.Unmarshal([]byte(api.body), &body); err != nil || body["error"] == "" || body["request_id"] == "" {
		t.Errorf("API error is not JSON with error and request_id: %s", api.body)
	}
	wantStatus(t, b.get("/no/such/page"), http.StatusSeeOther)
	b.signIn("victor")
	page := b.get("/no/such/page")
	wantStatus(t, page, http.StatusNotFound)
	if !strings.Contains(page.body, "There is no page here.") || !strings.Contains(page.Header.Get("Content-Type"), "text/html") {
		t.Errorf("404 for a browser is not an HTML page: %s", page.body)
	}
}

func TestSignInShowsTheOverviewFromStorage(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	wrong := b.post("/login", url.Values{"_csrf": {b.csrf("/login")}, "username": {"olivia"}, "password": {"nope"}})
	wantStatus(t, wrong, http.StatusUnauthorized)
	if !strings.Contains(wrong.body, "not right") || !strings.Contains(wrong.body, `value="olivia"`) {
		t.Errorf("failed sign-in page lacks the message or the name typed")
	}

	r := b.signIn("olivia")
	wantStatus(t, r, http.StatusSeeOther)
	var session *http.Cookie
	for _, c := range r.Cookies() {
		if c.Name == "fusebox_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie %+v, want HttpOnly and SameSite=Lax", session)
	}

	home := b.get("/")
	wantStatus(t, home, http.StatusOK)
	for _, want := range []string{
		"olivia (admin)", "You are signed in.",
		`data-testid="apps-count">1<`, `data-testid="circuits-open">1<`, `data-testid="circuits-half-open">1<`,
		"SyncInventory", "<td>more than 50 failures in 1m</td>", "<td>more than 20 failures in 5m</td>", "Nightly sales summary", "missing",
		"seeded the demo", "signed in",
	} {
		if !strings.Contains(home.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if again := b.get("/"); strings.Contains(again.body, "You are signed in.") {
		t.Error("the flash message showed twice")
	}
	partial := b.get("/", "HX-Request", "true")
	if strings.Contains(partial.body, "<html") || !strings.Contains(partial.body, `id="overview-body"`) {
		t.Error("htmx refresh did not get the overview body alone")
	}
}

func TestSignOutEndsTheSessionEverywhere(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	b := newBrowser(t, srv.URL)
	wantStatus(t, b.signIn("victor"), http.StatusSeeOther)
	u, _ := url.Parse(srv.URL)
	stolen := b.client.Jar.Cookies(u)

	out := b.post("/logout", url.Values{"_csrf": {b.csrf("/")}})
	wantStatus(t, out, http.StatusSeeOther)
	if out.Header.Get("Location") != "/login" {
		t.Errorf("sign-out lands on %q", out.Header.Get("Location"))
	}
	if !strings.Contains(b.get("/login").body, "You are signed out.") {
		t.Error("no signed-out message")
	}

	replay := newBrowser(t, srv.URL)
	replay.client.Jar.SetCookies(u, stolen)
	wantStatus(t, replay.get("/"), http.StatusSeeOther)
	audit := newBrowser(t, srv.URL)
	audit.signIn("olivia")
	body := audit.get("/audit").body
	if !strings.Contains(body, "signed out") || !strings.Contains(body, "victor") {
		t.Error("the audit log does not show victor signing out")
	}
}

func TestFormsNeedAValidCSRFToken(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	b := newBrowser(t, srv.URL)
	token := b.csrf("/login")
	form := url.Values{"username": {"olivia"}, "password": {apptest.Password}}
	wantStatus(t, b.post("/login", form), http.StatusForbidden)
	form.Set("_csrf", "forged")
	wantStatus(t, b.post("/login", form), http.StatusForbidden)
	form.Set("_csrf", newBrowser(t, srv.URL).csrf("/login")) // another browser's token
	wantStatus(t, b.post("/login", form), http.StatusForbidden)
	form.Set("_csrf", token)
	wantStatus(t, b.post("/login", form, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
	wantStatus(t, b.post("/login", form), http.StatusSeeOther)
}

func TestSignInAttemptsAreRateLimited(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_LOGIN_RATE_LIMIT": "0.001"})
	b := newBrowser(t, srv.URL)
	form := url.Values{"_csrf": {b.csrf("/login")}, "username": {"olivia"}, "password": {"guess"}}
	for range 10 { // the burst
		wantStatus(t, b.post("/login", form), http.StatusUnauthorized)
	}
	r := b.post("/login", form)
	wantStatus(t, r, http.StatusTooManyRequests)
	if !strings.Contains(r.body, "Too many attempts") {
		t.Errorf("429 page says: %s", r.body)
	}
	// Pages other than sign-in are not limited.
	wantStatus(t, b.get("/login"), http.StatusOK)
}

func TestSignInRedirectsStayOnSite(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	for next, want := range map[string]string{
		"/jobs?x=1":          "/jobs?x=1",
		"//evil.example":     "/",
		"/\\evil.example":    "/",
		"https://evil.test/": "/",
		"javascript:alert()": "/",
	} {
		b := newBrowser(t, srv.URL)
		r := b.post("/login", url.Values{"_csrf": {b.csrf("/login")}, "username": {"olivia"}, "password": {apptest.Password}, "next": {next}})
		if loc := r.Header.Get("Location"); loc != want {
			t.Errorf("next=%q: redirected to %q, want %q", next, loc, want)
		}
	}
}

func TestSecurityHeadersAndLimits(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_MAX_BODY_BYTES": "2048"})
	b := newBrowser(t, srv.URL)
	r := b.get("/login")
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP = %q", csp)
	}
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Error("no request id")
	}
	big := b.post("/login", url.Values{"_csrf": {b.csrf("/login")}, "username": {strings.Repeat("x", 4096)}})
	wantStatus(t, big, http.StatusRequestEntityTooLarge)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/login", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if resp.Header.Get("Content-Encoding") != "gzip" || err != nil {
		t.Fatalf("response not gzipped: %v", err)
	}
	if page, _ := io.ReadAll(zr); !bytes.Contains(page, []byte("Sign in to Fusebox")) {
		t.Error("gzipped page does not decode to the sign-in page")
	}
}

func TestStaticAssetsAreCacheBusted(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	b := newBrowser(t, srv.URL)
	m := regexp.MustCompile(`href="(/static/css/app\.css\?v=[0-9a-f]{12})"`).FindStringSubmatch(b.get("/login").body)
	if m == nil {
		t.Fatal("the page does not link a hashed stylesheet")
	}
	current := b.get(m[1])
	wantStatus(t, current, http.StatusOK)
	if cc := current.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
		t.Errorf("current asset Cache-Control = %q", cc)
	}
	if cc := b.get("/static/css/app.css?v=old").Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("stale asset Cache-Control = %q", cc)
	}
	wantStatus(t, b.get("/static/css/nope.css"), http.StatusNotFound)
}

func easyAuthHeader(roles ...string) string {
	claims := `{"typ":"http://schemas.microsoft.com/identity/claims/objectidentifier","val":"oid-7"},{"typ":"name","val":"Grace"}`
	for _, r := range roles {
		claims += `,{"typ":"roles","val":"` + r + `"}`
	}
	return base64.StdEncoding.EncodeToString([]byte(`{"auth_typ":"aad","name_typ":"name","role_typ":"roles","claims":[` + claims + `]}`))
}

func TestEasyAuthHeaderIsIgnoredUnlessEnabled(t *testing.T) {
	t.Parallel()
	off := apptest.Start(t, nil)
	r := newBrowser(t, off.URL).get("/", "X-MS-CLIENT-PRINCIPAL", easyAuthHeader("Fusebox.Operator"))
	wantStatus(t, r, http.StatusSeeOther)

	// WEBSITE_AUTH_ENABLED is what App Service sets when its authentication
	// is on; without it Fusebox refuses to start (config's tests).
	on := apptest.Start(t, map[string]string{"FUSEBOX_EASYAUTH_ENABLED": "true", "WEBSITE_AUTH_ENABLED": "True", "FUSEBOX_OPERATOR_CLAIM_VALUES": "Fusebox.Operator"})
	if err := demo.Seed(t.Context(), on.App.Store, t.TempDir()+"/local.settings.json", on.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, on.URL)
	ok := b.get("/", "X-MS-CLIENT-PRINCIPAL", easyAuthHeader("Fusebox.Operator"))
	wantStatus(t, ok, http.StatusOK)
	if !strings.Contains(ok.body, "Grace (operator)") {
		t.Error("Easy Auth principal not shown")
	}
	wantStatus(t, b.get("/", "X-MS-CLIENT-PRINCIPAL", "bm90IGpzb24="), http.StatusUnauthorized)
	// Claims that grant nothing sign in to an empty Fusebox that says why:
	// a team may name them later.
	none := b.get("/", "X-MS-CLIENT-PRINCIPAL", easyAuthHeader("Someone.Else"))
	wantStatus(t, none, http.StatusOK)
	if !strings.Contains(none.body, `data-testid="no-team"`) || strings.Contains(none.body, "SyncInventory") {
		t.Error("a person in no team is not told why Fusebox is empty, or is shown circuits")
	}
	// The circuit exists (Grace, an operator of every app, opens it): to
	// someone in no team it is not there.
	wantStatus(t, b.get("/circuits/orders-demo/SyncInventory", "X-MS-CLIENT-PRINCIPAL", easyAuthHeader("Fusebox.Operator")), http.StatusOK)
	wantStatus(t, b.get("/circuits/orders-demo/SyncInventory", "X-MS-CLIENT-PRINCIPAL", easyAuthHeader("Someone.Else")), http.StatusNotFound)
}

func TestOIDCSignInOverHTTP(t *testing.T) {
	t.Parallel()
	var srv *apptest.Server
	provider := oidctest.Start(t, "", func() time.Time { return srv.Clock.Now() })
	provider.SetUser(oidctest.User{Subject: "u-9", Name: "Ada", Claims: map[string]any{"groups": []any{"g-operators"}}})
	srv = apptest.Start(t, map[string]string{
		"FUSEBOX_OIDC_ISSUER": provider.URL, "FUSEBOX_OIDC_CLIENT_ID": provider.ClientID,
		"FUSEBOX_OIDC_CLIENT_SECRET": provider.ClientSecret, "FUSEBOX_ROLE_CLAIM": "groups",
		"FUSEBOX_OPERATOR_CLAIM_VALUES": "g-operators",
	})
	provider.SetRedirectURI(srv.URL + "/auth/oidc/callback")
	b := newBrowser(t, srv.URL)
	if !strings.Contains(b.get("/login").body, `href="/auth/oidc/login?next=%2F"`) {
		t.Fatal("the sign-in page offers no single sign-on")
	}
	hop := b.get("/auth/oidc/login?next=/jobs")
	wantStatus(t, hop, http.StatusFound)
	atProvider := b.do(mustRequest(t, hop.Header.Get("Location")))
	wantStatus(t, atProvider, http.StatusFound)
	back := b.do(mustRequest(t, atProvider.Header.Get("Location")))
	wantStatus(t, back, http.StatusSeeOther)
	if back.Header.Get("Location") != "/jobs" {
		t.Errorf("after sign-in, sent to %q, want /jobs", back.Header.Get("Location"))
	}
	if !strings.Contains(b.get("/jobs").body, "Ada (operator)") {
		t.Error("not signed in as Ada after the callback")
	}
	// Replaying the callback (a bookmarked or leaked URL) does not sign in again.
	other := newBrowser(t, srv.URL)
	wantStatus(t, other.do(mustRequest(t, atProvider.Header.Get("Location"))), http.StatusBadRequest)
}

func mustRequest(t *testing.T, u string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestLocksPageListsLeases(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	held, err := srv.App.Locker.TryAcquire(t.Context(), "orders/100")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(t.Context())
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	body := b.get("/locks").body
	rows := regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(body, -1)
	found := map[string]string{}
	for _, r := range rows {
		text := regexp.MustCompile(`<[^>]+>`).ReplaceAllString(r[1], " ")
		text = strings.Join(strings.Fields(text), " ")
		if name, _, ok := strings.Cut(text, " "); ok {
			found[name] = text
		}
	}
	if row := found["migrations"]; !strings.Contains(row, "free nobody 1") {
		t.Errorf("migrations row = %q, want free, nobody, generation 1", row)
	}
	if row := found["orders/100"]; !strings.Contains(row, "held") || !strings.Contains(row, "(this instance) 1") || !strings.Contains(row, "15s of 15s") {
		t.Errorf("orders/100 row = %q, want held by this instance, generation 1, expiring in 15s", row)
	}
}

func TestStorageRowsOfOthersAreValidated(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	type badCircuit struct {
		tablestore.Meta
		Threshold     int32
		WindowSeconds int32
		State         string
	}
	svc := srv.App.Store.Service
	if err := svc.Table("Circuits").Insert(t.Context(), &badCircuit{Meta: tablestore.Meta{PartitionKey: "app", RowKey: "c|Fn"}, Threshold: 5, WindowSeconds: 30, State: "melted"}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	// The bad row is skipped: the pages render, and the overview names it
	// with what is wrong.
	wantStatus(t, b.get("/circuits"), http.StatusOK)
	r := b.get("/")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, `data-testid="faults"`) || !strings.Contains(r.body, "app/c|Fn") || !strings.Contains(r.body, `unknown state &#34;melted&#34;`) {
		t.Errorf("the overview does not list the unreadable circuit row: %s", r.body)
	}
}

// TestSignInGivesTheBrowserANewCSRFToken: a token taken from the sign-in
// page (or planted with a cookie before it) stops working once the
// browser signs in, and each page carries its token masked afresh, so no
// two responses hold the same bytes (BREACH).
func TestSignInGivesTheBrowserANewCSRFToken(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	b := newBrowser(t, srv.URL)
	before := b.csrf("/login")
	if again := b.csrf("/login"); again == before {
		t.Error("two pages carry the same CSRF token bytes")
	}
	wantStatus(t, b.signIn("olivia"), http.StatusSeeOther)
	if r := b.post("/logout", url.Values{"_csrf": {before}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("a token from before sign-in answered %d, want 403", r.StatusCode)
	}
	if r := b.post("/logout", url.Values{"_csrf": {b.csrf("/")}}); r.StatusCode == http.StatusForbidden {
		t.Errorf("the session's own token was refused: %d %s", r.StatusCode, r.body)
	}
}
