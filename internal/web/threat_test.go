package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/auth/oidctest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// The tests of docs/reliability.md's threat model that drive a running
// Fusebox from outside, as a stranger would.

// lockedBuffer is a log the server writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAFloodOfMadeUpAppsFromManyAddressesLeavesRealReportsAccepted
// floods from 120 addresses (through the trusted proxy header), each
// naming app ids of its own, some not even valid ids: every report the
// real app sends meanwhile is accepted, and the malformed ids are refused
// without a storage read.
func TestAFloodOfMadeUpAppsFromManyAddressesLeavesRealReportsAccepted(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_TRUST_PROXY_HEADERS": "true"})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "SyncInventory", "count": 1}]}`); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the real app's first report: %d", r.StatusCode)
	}
	const addresses, each = 120, 25 // 3,000 forged requests, 2,400 within the addresses' bursts
	floodWhileTheRealAppReports(t, srv.URL, addresses, each, func(a, i int) *http.Request {
		app := fmt.Sprintf("made-up-%d-%d", a, i)
		if i%5 == 0 {
			app = fmt.Sprintf("Not_Valid%d", i) // AppOfKey reads up to the first '_'
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures":[{"function":"F","count":1}]}`))
		req.Header.Set("Authorization", "Bearer fbx_"+app+"_forged")
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.%d.%d:4%04d", a/200, a%200+1, i))
		return req
	})
	metrics := newBrowser(t, srv.URL).get("/metrics").body
	if !strings.Contains(metrics, fmt.Sprintf(`fusebox_ingest_unverified_total{reason="malformed"} %d`+"\n", addresses*each/5)) {
		t.Errorf("want the %d keys naming invalid ids refused as malformed, before any read:\n%s", addresses*each/5, testenv.GrepLines(metrics, "fusebox_ingest_unverified"))
	}
}

// A stranger floods the ingest endpoint with keys that name the demo app
// but are not its key. Before, the app's rate budget was spent by the
// name in the key, so the real reports answered 429 while the flood
// lasted. Now only verified keys spend it: every real report is taken,
// the forged ones are refused and, past a few a second from the
// stranger's address, refused without a storage read; the log says so
// once, not per request.
func TestAForgedKeyFloodLeavesTheRealKeysReportsAccepted(t *testing.T) {
	t.Parallel()
	log := &lockedBuffer{}
	srv := apptest.StartWith(t, nil, apptest.Options{Log: log})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 250 // 2,000 forged requests: twice the app's burst
	forged := floodWhileTheRealAppReports(t, srv.URL, workers, each, func(w, i int) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures":[{"function":"ProcessOrders","count":1}]}`))
		req.Header.Set("Authorization", fmt.Sprintf("Bearer fbx_%s_forged-%d-%d", demo.AppID, w, i))
		return req
	})
	if forged[http.StatusTooManyRequests] == 0 {
		t.Errorf("forged requests answered %v: none was limited per client", forged)
	}
	lines := testenv.GrepLines(log.String(), "route=/api/v1/failures status=4")
	if n := strings.Count(lines, "\n") + 1; lines == "" || n > 4 {
		t.Errorf("%d log lines for the flood's refusals, want one or two per status:\n%s", n, lines)
	}
	metrics := newBrowser(t, srv.URL).get("/metrics").body
	for _, reason := range []string{"unknown", "limited"} {
		if regexp.MustCompile(`fusebox_ingest_unverified_total\{reason="` + reason + `"\} 0\n`).MatchString(metrics) {
			t.Errorf("no refusal counted as %s:\n%s", reason, testenv.GrepLines(metrics, "fusebox_ingest_unverified"))
		}
	}
}

// The method label of the HTTP metrics is from a fixed set: made-up
// methods, which any client may send without signing in, are OTHER, not a
// new series each, kept for the life of the process.
func TestMadeUpMethodsAddNoSeries(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	client := &http.Client{}
	for i := range 200 {
		req, _ := http.NewRequest(fmt.Sprintf("MADEUP%d", i), srv.URL+"/healthz", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	body := newBrowser(t, srv.URL).get("/metrics").body
	methods := map[string]bool{}
	for _, m := range regexp.MustCompile(`fusebox_http_requests_total\{[^}]*method="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		methods[m[1]] = true
	}
	if !methods["OTHER"] {
		t.Errorf("no OTHER series: %v", methods)
	}
	for m := range methods {
		switch m {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER":
		default:
			t.Errorf("a series for method %q", m)
		}
	}
}

// A local user's role is configuration's at each request: when an
// operator is made a viewer (Fusebox restarted with the new users), the
// session they hold is a viewer's from the next request, not for the
// rest of its 12 hours; a user removed is signed out.
func TestALocalRoleTakenAwayAppliesAtTheNextRequest(t *testing.T) {
	t.Parallel()
	before := apptest.Start(t, nil)
	b := newBrowser(t, before.URL)
	b.signIn("olivia")
	wantStatus(t, b.get("/apps/new"), http.StatusOK)

	hash, err := auth.HashPassword(apptest.Password)
	if err != nil {
		t.Fatal(err)
	}
	shared := map[string]string{"FUSEBOX_TABLE_PREFIX": before.Config.Storage.TablePrefix}
	demoted := apptest.Start(t, with(shared, "FUSEBOX_LOCAL_USERS", "olivia:viewer:"+hash))
	same := &browser{t: t, base: demoted.URL, client: b.client} // the same cookies
	wantStatus(t, same.get("/"), http.StatusOK)
	wantStatus(t, same.get("/apps/new"), http.StatusForbidden)

	removed := apptest.Start(t, with(shared, "FUSEBOX_LOCAL_USERS", "victor:viewer:"+hash))
	gone := &browser{t: t, base: removed.URL, client: b.client}
	wantStatus(t, gone.get("/"), http.StatusSeeOther)
}

func with(env map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for ek, ev := range env {
		out[ek] = ev
	}
	return out
}

// One app key sends 10,000 items naming 60 functions that have no circuit.
// Before, each became failure rows the evaluator read every tick. Now they
// are kept as one tally row per function and minute, for at most 50 such
// names an app an hour (the rest are refused item by item), the evaluator
// reads none of them, and the Apps page lists them with Create circuit….
func TestReportsOfFunctionsWithoutACircuitAreTalliedAndBounded(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	items := make([]string, 0, 10_000)
	refusedWant := 0
	for i := range 10_000 {
		if i%60 >= 50 {
			refusedWant++
		}
		items = append(items, fmt.Sprintf(`{"function": "Made%02d", "count": 1}`, i%60))
	}
	r := postJSON(t, srv.URL, demo.Key, `{"failures": [`+strings.Join(items, ",")+`]}`)
	wantStatus(t, r, http.StatusAccepted)
	var got struct {
		Accepted  int `json:"accepted"`
		NoCircuit int `json:"no_circuit"`
		Rejected  []struct {
			Index int
			Error string
		} `json:"rejected"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rejected) != refusedWant || got.NoCircuit != 10_000-refusedWant || got.Accepted != got.NoCircuit {
		t.Fatalf("accepted %d, no circuit %d, rejected %d; want %d tallied and %d refused", got.Accepted, got.NoCircuit, len(got.Rejected), 10_000-refusedWant, refusedWant)
	}
	if !strings.Contains(got.Rejected[0].Error, "has no circuit") || got.Rejected[0].Index != 50 {
		t.Errorf("first refusal: %+v", got.Rejected[0])
	}
	if n := storedFailures(t, srv); n != 0 {
		t.Errorf("%d failures stored as rows the evaluator reads", n)
	}
	tallies, err := srv.App.Store.Rates.OfApp(t.Context(), demo.AppID, srv.Clock.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	perFunction := map[string]int{}
	for _, m := range tallies {
		perFunction[m.Circuit] += m.Count
	}
	if len(tallies) != 50 || len(perFunction) != 50 {
		t.Errorf("%d tally rows for %d functions, want one row for each of 50", len(tallies), len(perFunction))
	}
	if n := perFunction[demo.AppID+"/Made00"]; n != 167 { // 0, 60, …, 9960
		t.Errorf("Made00 tallied %d failures, want 167", n)
	}

	// Functions with a circuit are counted as before, beside them.
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 3}, {"function": "Made00", "count": 2}]}`), http.StatusAccepted)
	if n := storedFailures(t, srv); n != 3 {
		t.Errorf("%d failures stored, want ProcessOrders' 3", n)
	}

	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/apps").body
	if !strings.Contains(page, "Reporting, no circuit") || !strings.Contains(page, "Made00 (169 failures in the last hour)") {
		t.Errorf("the Apps page does not list the functions without a circuit:\n%s", testenv.GrepLines(page, "Made0"))
	}
	link := "/circuits/new?app=" + demo.AppID + "&amp;function=Made00"
	if !strings.Contains(page, link) {
		t.Errorf("no Create circuit… link %s", link)
	}
	if form := b.get("/circuits/new?app=" + demo.AppID + "&function=Made00").body; !strings.Contains(form, `value="Made00"`) {
		t.Error("the new circuit form does not name the function")
	}
}

// A single sign-on user's role is the provider's, read again at least
// every 5 minutes: an operator made a viewer at the provider is a viewer
// here within 5 minutes, not for the rest of a 12-hour session. Pages go
// through the provider, which signs a user still signed in there back in
// at once; a change sent with an old role is refused with what to do.
func TestASingleSignOnRoleIsReadAgainWithinFiveMinutes(t *testing.T) {
	t.Parallel()
	var srv *apptest.Server
	provider := oidctest.Start(t, "", func() time.Time { return srv.Clock.Now() })
	provider.SetUser(oidctest.User{Subject: "u-9", Name: "Ada", Claims: map[string]any{"groups": []any{"g-operators"}}})
	srv = apptest.Start(t, map[string]string{
		"FUSEBOX_OIDC_ISSUER": provider.URL, "FUSEBOX_OIDC_CLIENT_ID": provider.ClientID,
		"FUSEBOX_OIDC_CLIENT_SECRET": provider.ClientSecret, "FUSEBOX_ROLE_CLAIM": "groups",
		"FUSEBOX_OPERATOR_CLAIM_VALUES": "g-operators", "FUSEBOX_VIEWER_CLAIM_VALUES": "g-viewers",
	})
	provider.SetRedirectURI(srv.URL + "/auth/oidc/callback")
	b := newBrowser(t, srv.URL)
	ssoTo := func(next string) response {
		t.Helper()
		hop := b.get("/auth/oidc/login?next=" + next)
		wantStatus(t, hop, http.StatusFound)
		atProvider := b.do(mustRequest(t, hop.Header.Get("Location")))
		wantStatus(t, atProvider, http.StatusFound)
		return b.do(mustRequest(t, atProvider.Header.Get("Location")))
	}
	wantStatus(t, ssoTo("/apps/new"), http.StatusSeeOther)
	wantStatus(t, b.get("/apps/new"), http.StatusOK)

	provider.SetUser(oidctest.User{Subject: "u-9", Name: "Ada", Claims: map[string]any{"groups": []any{"g-viewers"}}})
	srv.Clock.Advance(4 * time.Minute)
	wantStatus(t, b.get("/apps/new"), http.StatusOK) // within 5 minutes the session's role holds
	srv.Clock.Advance(2 * time.Minute)
	path := "/apps/new"
	if r := b.post(path, url.Values{"_csrf": {b.csrf("/login")}, "id": {"x"}}); r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.body, "every 5 minutes") {
		t.Errorf("a change sent with a role 6 minutes old: %d\n%s", r.StatusCode, r.body)
	}
	again := b.get(path)
	wantStatus(t, again, http.StatusSeeOther)
	if loc := again.Header.Get("Location"); loc != "/auth/oidc/login?next=%2Fapps%2Fnew" {
		t.Fatalf("sent to %q, want through the provider", loc)
	}
	wantStatus(t, ssoTo("/apps/new"), http.StatusSeeOther)
	wantStatus(t, b.get("/apps/new"), http.StatusForbidden)
	if !strings.Contains(b.get("/").body, "Ada (viewer)") {
		t.Error("Ada is not shown as a viewer after the provider's change")
	}
}

// A tally row another program wrote badly costs only the reports it would
// add up: they come back refused, to be sent again; the function with a
// circuit beside them is counted, and another function's tally is kept.
func TestABadTallyRowRefusesOnlyItsOwnItems(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	minute := srv.Clock.Now().UTC().Truncate(time.Minute)
	sc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(t), &aztables.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := json.Marshal(map[string]any{"PartitionKey": demo.AppID, "RowKey": "Made00|" + storage.FailurePartition(minute),
		"Function": "Made00", "Minute": minute.Format(time.RFC3339), "Count": "lots"})
	if _, err := sc.NewClient(srv.App.Store.Service.TableName(storage.TableRates)).AddEntity(t.Context(), bad, nil); err != nil {
		t.Fatal(err)
	}
	r := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "Made00", "count": 2}, {"function": "ProcessOrders", "count": 3}, {"function": "Made01", "count": 1}]}`)
	wantStatus(t, r, http.StatusAccepted)
	var got struct {
		Accepted  int `json:"accepted"`
		NoCircuit int `json:"no_circuit"`
		Rejected  []struct {
			Index int
			Error string
		} `json:"rejected"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Accepted != 2 || got.NoCircuit != 1 || len(got.Rejected) != 1 || got.Rejected[0].Index != 0 || !strings.Contains(got.Rejected[0].Error, "send this item again") {
		t.Errorf("answer %s, want Made00 refused to be sent again, the other two accepted", r.body)
	}
	if n := storedFailures(t, srv); n != 3 {
		t.Errorf("%d failures stored, want ProcessOrders' 3", n)
	}
	tallies, err := srv.App.Store.Rates.OfApp(t.Context(), demo.AppID, minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(tallies) != 1 || tallies[0].Circuit != demo.AppID+"/Made01" || tallies[0].Count != 1 {
		t.Errorf("tallies %+v, want Made01's 1 (the bad row is skipped)", tallies)
	}
}

// The same journey on the real clock, with a role kept 3 s: nothing jumps
// past the window. Right after sign-in the operator acts as one; once the
// provider makes them a viewer, the next page after the window passes
// through the provider and they are a viewer, no later than the window
// (plus the time a loaded machine takes) after the change.
func TestASingleSignOnRoleIsReadAgainOnTheRealClock(t *testing.T) {
	t.Parallel()
	const maxAge = 3 * time.Second
	provider := oidctest.Start(t, "", time.Now)
	provider.SetUser(oidctest.User{Subject: "u-9", Name: "Ada", Claims: map[string]any{"groups": []any{"g-operators"}}})
	srv := apptest.StartRealClock(t, map[string]string{
		"FUSEBOX_OIDC_ISSUER": provider.URL, "FUSEBOX_OIDC_CLIENT_ID": provider.ClientID,
		"FUSEBOX_OIDC_CLIENT_SECRET": provider.ClientSecret, "FUSEBOX_ROLE_CLAIM": "groups",
		"FUSEBOX_OPERATOR_CLAIM_VALUES": "g-operators", "FUSEBOX_VIEWER_CLAIM_VALUES": "g-viewers",
		"FUSEBOX_OIDC_ROLE_MAX_AGE": maxAge.String(),
	})
	provider.SetRedirectURI(srv.URL + "/auth/oidc/callback")
	b := newBrowser(t, srv.URL)
	// open follows the page's redirects, through the provider and back,
	// as a browser does, and returns where it ended.
	open := func(path string) response {
		t.Helper()
		r := b.get(path)
		for hops := 0; r.StatusCode == http.StatusFound || r.StatusCode == http.StatusSeeOther; hops++ {
			if hops == 5 {
				t.Fatalf("more than 5 redirects from %s", path)
			}
			r = b.do(mustRequest(t, resolve(srv.URL, r.Header.Get("Location"))))
		}
		return r
	}
	wantStatus(t, open("/auth/oidc/login?next=/apps/new"), http.StatusOK)
	signedIn := time.Now() // the session's role was read before this
	if time.Since(signedIn) < maxAge {
		wantStatus(t, b.get("/apps/new"), http.StatusOK) // no trip through the provider within the window
	}

	provider.SetUser(oidctest.User{Subject: "u-9", Name: "Ada", Claims: map[string]any{"groups": []any{"g-viewers"}}})
	changed := time.Now()
	// Inside the window the role read at sign-in still holds.
	if time.Since(signedIn) < maxAge {
		wantStatus(t, b.get("/apps/new"), http.StatusOK)
	}
	// The first page once the window has passed goes through the provider
	// and finds the new role: one request at the window's end, no polling.
	waitUntil(t, signedIn.Add(maxAge+100*time.Millisecond))
	wantStatus(t, open("/apps/new"), http.StatusForbidden)
	took := time.Since(changed)
	t.Logf("demoted %s after the provider's change (role kept %s)", took.Round(time.Millisecond), maxAge)
	if !strings.Contains(b.get("/").body, "Ada (viewer)") {
		t.Error("Ada is not shown as a viewer")
	}
}

// waitUntil waits on the real clock until t: a real-clock journey's step
// that must come after a window's end, taken once, not polled.
func waitUntil(tb testing.TB, t time.Time) {
	tb.Helper()
	select {
	case <-time.After(time.Until(t)):
	case <-tb.Context().Done():
		tb.Fatal("the test ended while waiting")
	}
}

// resolve makes a Location absolute against base.
func resolve(base, location string) string {
	if strings.HasPrefix(location, "/") {
		return base + location
	}
	return location
}

// On the real clock: a function that fails without a circuit shows on the
// Apps page; the operator follows Create circuit… and saves; within the
// 2 s the circuit list is reused, its reports are counted by the circuit
// instead of tallied, and the circuit's page shows them.
func TestAFunctionReportingWithoutACircuitGetsOneOnTheRealClock(t *testing.T) {
	t.Parallel()
	srv := apptest.StartRealClock(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	report := func() (noCircuit int) {
		t.Helper()
		r := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ShipParcels", "count": 1}]}`)
		wantStatus(t, r, http.StatusAccepted)
		var got struct {
			NoCircuit int `json:"no_circuit"`
		}
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatal(err)
		}
		return got.NoCircuit
	}
	if report() != 1 {
		t.Fatal("a function without a circuit was not tallied")
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/apps").body
	link := "/circuits/new?app=" + demo.AppID + "&amp;function=ShipParcels"
	if !strings.Contains(page, "ShipParcels (1 failure in the last hour)") || !strings.Contains(page, link) {
		t.Fatalf("the Apps page does not offer a circuit for ShipParcels:\n%s", testenv.GrepLines(page, "ShipParcels"))
	}
	form := "/circuits/new?app=" + demo.AppID + "&function=ShipParcels"
	wantStatus(t, b.post("/circuits/new", url.Values{"_csrf": {b.csrf(form)}, "app": {demo.AppID}, "function": {"ShipParcels"},
		"threshold": {"1000"}, "window": {"1m"}}), http.StatusSeeOther)
	created := time.Now()
	// The circuit list is reused for at most 2 s: the first report after
	// that is counted by the circuit, not tallied.
	waitUntil(t, created.Add(2*time.Second+100*time.Millisecond))
	if n := report(); n != 0 {
		t.Fatalf("a report %s after the circuit was created was still tallied", time.Since(created).Round(time.Millisecond))
	}
	t.Logf("counted by the new circuit %s after it was created", time.Since(created).Round(time.Millisecond))
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), time.Now().Add(-time.Minute), time.Now(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || rows[0].Circuit != demo.AppID+"/ShipParcels" {
		t.Errorf("failure rows %+v, want the new circuit's", rows)
	}
}

// floodWhileTheRealAppReports sends each of workers' forged requests in
// turn while the demo app reports all through the flood, at least 30
// times; every real report must be answered 202 and every forged one 401
// or 429. It returns the forged requests' answers by status.
func floodWhileTheRealAppReports(t *testing.T, url string, workers, each int, forge func(w, i int) *http.Request) map[int]int {
	t.Helper()
	var mu sync.Mutex
	forged := map[int]int{}
	var wg sync.WaitGroup
	client := &http.Client{}
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				resp, err := client.Do(forge(w, i))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				mu.Lock()
				forged[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	flooded := make(chan struct{})
	go func() { wg.Wait(); client.CloseIdleConnections(); close(flooded) }()
	real, sent := map[int]int{}, 0
	for flooding := true; flooding || sent < 30; sent++ {
		r := postJSON(t, url, demo.Key, `{"failures": [{"function": "SyncInventory", "count": 1}]}`)
		real[r.StatusCode]++
		select {
		case <-flooded:
			flooding = false
		default:
		}
	}
	if real[http.StatusAccepted] != sent {
		t.Errorf("the real key's %d reports during the flood: %v, want all answered 202", sent, real)
	}
	if forged[http.StatusAccepted] != 0 || forged[http.StatusUnauthorized]+forged[http.StatusTooManyRequests] != workers*each {
		t.Errorf("forged requests answered %v, want only 401 and 429", forged)
	}
	return forged
}

// TestMachineIntakeRunsNoneOfThePeoplesChain: a report or a ping is
// checked by its own short chain. A body over the limit is refused before
// its key is looked at (no verdict on the key is counted); a report needs
// no CSRF token, and neither a report nor a ping is answered with a
// cookie, so no session or CSRF state is made for a machine.
func TestMachineIntakeRunsNoneOfThePeoplesChain(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_MAX_BODY_BYTES": "2048"})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	big := `{"failures": [{"function": "ProcessOrders", "error": "` + strings.Repeat("x", 3000) + `"}]}`
	if r := postJSON(t, srv.URL, "fbx_made-up-app_forged", big); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 3 kB report under a 2 kB limit: %d, want 413", r.StatusCode)
	}
	metrics := newBrowser(t, srv.URL).get("/metrics").body
	for _, reason := range []string{"malformed", "unknown", "limited"} {
		if !strings.Contains(metrics, `fusebox_ingest_unverified_total{reason="`+reason+`"} 0`+"\n") {
			t.Errorf("the oversized report's key was looked at (%s):\n%s", reason, testenv.GrepLines(metrics, "fusebox_ingest_unverified"))
		}
	}

	r := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 1}]}`)
	if r.StatusCode != http.StatusAccepted {
		t.Errorf("a report with no CSRF token: %d %s, want 202", r.StatusCode, r.body)
	}
	if c := r.Header.Values("Set-Cookie"); len(c) > 0 {
		t.Errorf("a report was answered with cookies: %q", c)
	}
	ping := newBrowser(t, srv.URL).get("/ping/" + demo.PingToken("5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03"))
	if ping.StatusCode != http.StatusOK {
		t.Errorf("the demo job's ping: %d", ping.StatusCode)
	}
	if c := ping.Header.Values("Set-Cookie"); len(c) > 0 {
		t.Errorf("a ping was answered with cookies: %q", c)
	}
}

// Hosts export and jobs ping many times a second: the calls Fusebox
// accepts are summed up in one line a minute per app, not logged one by
// one, or a hundred hosts would write hundreds of lines a second nobody
// reads; pages still are, and refusals.
func TestAcceptedMachineCallsAreCountedNotLogged(t *testing.T) {
	t.Parallel()
	log := &lockedBuffer{}
	srv := apptest.StartWith(t, nil, apptest.Options{Log: log})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	report := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures":[{"function":"ProcessOrders","count":1}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 5 {
		if code := report(demo.Key); code != http.StatusAccepted {
			t.Fatalf("a report: %d", code)
		}
	}
	if code := report("fbx_" + demo.AppID + "_wrong"); code != http.StatusUnauthorized {
		t.Fatalf("a forged report: %d", code)
	}
	b := newBrowser(t, srv.URL)
	wantStatus(t, b.get("/login"), http.StatusOK)
	srv.App.Web.LogIntakeSummary(t.Context()) // as Fusebox does once a minute
	text := log.String()
	if lines := testenv.GrepLines(text, "route=/api/v1/failures status=202"); lines != "" {
		t.Errorf("accepted reports are logged at info:\n%s", lines)
	}
	if summary := testenv.GrepLines(text, `msg="machine calls accepted"`); !strings.Contains(summary, "from="+demo.AppID+" calls=5 slow=0") || strings.Count(summary, "\n") != 0 {
		t.Errorf("the minute's summary of the accepted reports: %q; want one line for %s, 5 calls", summary, demo.AppID)
	}
	for _, want := range []string{"route=/api/v1/failures status=401", "route=/login status=200"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
	if m := b.get("/metrics").body; !strings.Contains(m, `fusebox_http_requests_total{code="202",method="POST",route="/api/v1/failures"} 5`) {
		t.Errorf("the accepted reports are not counted:\n%s", testenv.GrepLines(m, "fusebox_http_requests_total"))
	}
}
