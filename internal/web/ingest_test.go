package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
)

func postJSON(t *testing.T, url, key, body string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/failures", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return newBrowser(t, url).do(req)
}

func storedFailures(t *testing.T, srv *apptest.Server) int { return storedFailuresOf(t, srv, "") }

// storedFailuresOf adds up the stored failures of one circuit
// ("app/function"), or of all for "".
func storedFailuresOf(t *testing.T, srv *apptest.Server, circuitID string) int {
	t.Helper()
	now := srv.Clock.Now()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), now.Add(-time.Hour), now.Add(time.Hour), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if circuitID == "" || r.Circuit == circuitID {
			n += r.Count
		}
	}
	return n
}

func TestIngestNeedsTheAppsKey(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	body := `{"failures": [{"function": "ProcessOrders"}]}`
	for name, key := range map[string]string{
		"no key":             "",
		"not a key":          "hello",
		"another app's form": "fbx_other-app_" + strings.Repeat("x", 43),
		"wrong secret":       demo.Key + "x",
	} {
		r := postJSON(t, srv.URL, key, body)
		if r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s, want 401 JSON", name, r.StatusCode, r.body)
		}
	}
	if n := storedFailures(t, srv); n != 0 {
		t.Errorf("%d failures stored from unauthenticated requests", n)
	}
}

func TestIngestKeepsValidItemsAndReportsTheRest(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	at := srv.Clock.Now().Add(-10 * time.Second).Format(time.RFC3339)
	body := `{"failures": [
		{"function": "ProcessOrders", "at": "` + at + `", "count": 3, "error": "timeout"},
		{"function": "bad name!"},
		{"app": "someone-else", "function": "ProcessOrders"},
		{"function": "ProcessOrders", "at": "yesterday"},
		"not an object",
		{"function": "ProcessOrders"},
		{"function": "ProcessOrders", "count": "many"}
	]}`
	r := postJSON(t, srv.URL, demo.Key, body)
	wantStatus(t, r, http.StatusAccepted)
	var got struct {
		Accepted, Failures int
		Rejected           []struct {
			Index int
			Error string
		}
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Accepted != 2 || got.Failures != 4 || len(got.Rejected) != 5 {
		t.Fatalf("response %s, want 2 items (4 failures) accepted and 5 rejected", r.body)
	}
	wantIdx := []int{1, 2, 3, 4, 6}
	for i, rej := range got.Rejected {
		if rej.Index != wantIdx[i] || rej.Error == "" {
			t.Errorf("rejected[%d] = %+v, want index %d with a reason", i, rej, wantIdx[i])
		}
	}
	if !strings.Contains(got.Rejected[1].Error, `belongs to "orders-demo"`) {
		t.Errorf("app mismatch reason: %q", got.Rejected[1].Error)
	}
	if n := storedFailures(t, srv); n != 4 {
		t.Errorf("%d failures stored, want 4", n)
	}

	none := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "-"}]}`)
	wantStatus(t, none, http.StatusBadRequest)
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": `), http.StatusBadRequest)
	big := `{"failures": [` + strings.Repeat(`{"function": "ProcessOrders"},`, 40000) + `{}]}`
	wantStatus(t, postJSON(t, srv.URL, demo.Key, big), http.StatusRequestEntityTooLarge)
}

func TestIngestAnswers503WhenItCannotStore(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	if err := srv.App.Store.Service.DeleteTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	r := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders"}]}`)
	wantStatus(t, r, http.StatusServiceUnavailable)
	if !strings.Contains(r.body, "nothing was stored") {
		t.Errorf("503 body: %s", r.body)
	}
}

func TestReportedFailuresTripTheCircuitAndFlipTheLocalSwitch(t *testing.T) {
	t.Parallel()
	srv, settings := apptest.Seeded(t)
	r := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 101}]}`)
	wantStatus(t, r, http.StatusAccepted)
	srv.Clock.Advance(time.Second) // the evaluator's next tick
	waitOpen(t, srv, "ProcessOrders")
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders"); !strings.HasPrefix(c.Reason, "101 failures in 30s") {
		t.Errorf("reason %q", c.Reason)
	}
	if off, err := localsettings.Disabled(settings, "ProcessOrders"); err != nil || !off {
		t.Errorf("local.settings.json: ProcessOrders disabled = %v (err %v), want true", off, err)
	}
}

func TestChartsShowFailures(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	now := srv.Clock.Now()
	if err := srv.App.Store.Failures.Record(t.Context(), "w", []storage.Report{
		{App: demo.AppID, Function: "ProcessOrders", Second: now.Add(-5 * time.Second), Count: 7},
		{App: demo.AppID, Function: "ProcessOrders", Second: now.Add(-3 * time.Minute), Count: 4},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.App.Store.Rates.Rollup(t.Context(), srv.App.Store.Failures, now.Add(-3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	list := b.get("/circuits").body
	if !strings.Contains(list, `class="spark busy"`) {
		t.Error("no busy sparkline for ProcessOrders on the circuits page")
	}
	page := b.get("/circuits/orders-demo/ProcessOrders").body
	if !strings.Contains(page, "<title>7</title>") {
		t.Error("the window chart has no bar of 7")
	}
	// The last quarter of an hour: the rolled-up minute's 4 and the 7 the
	// roll-up has not reached yet.
	if !strings.Contains(page, "<title>11</title>") {
		t.Error("the 24-hour chart has no bar of 11 (4 rolled up, 7 since)")
	}
}

func postWithHeaders(t *testing.T, url, body string, headers map[string]string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/failures", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return newBrowser(t, url).do(req)
}

// The client's X-Request-ID names nothing stored: two requests carrying
// the same one in the same second are both counted.
func TestTwoRequestsWithTheSameRequestIDAreBothCounted(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	before := storedFailures(t, srv)
	for range 2 {
		r := postWithHeaders(t, srv.URL, `{"failures": [{"function": "ProcessOrders", "count": 7}]}`, map[string]string{"X-Request-ID": "same-id"})
		wantStatus(t, r, http.StatusAccepted)
	}
	if got := storedFailures(t, srv) - before; got != 14 {
		t.Errorf("stored %d failures from two requests of 7, want 14", got)
	}
}

// A request retried with the same Idempotency-Key, even a few seconds
// later, is counted once; another key is another request.
func TestARetriedRequestWithTheSameIdempotencyKeyCountsOnce(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	before := storedFailures(t, srv)
	body := `{"failures": [{"function": "ProcessOrders", "count": 5}, {"function": "SendReceipts", "count": 2}]}`
	wantStatus(t, postWithHeaders(t, srv.URL, body, map[string]string{"Idempotency-Key": "b1946ac9-2d1f-4c6e-9f1c-0d3c4c1f6a10"}), http.StatusAccepted)
	srv.Clock.Advance(3 * time.Second) // the client's retry, after its timeout
	wantStatus(t, postWithHeaders(t, srv.URL, body, map[string]string{"Idempotency-Key": "b1946ac9-2d1f-4c6e-9f1c-0d3c4c1f6a10"}), http.StatusAccepted)
	if got := storedFailures(t, srv) - before; got != 7 {
		t.Errorf("stored %d failures after a retry of a request of 7, want 7", got)
	}
	wantStatus(t, postWithHeaders(t, srv.URL, body, map[string]string{"Idempotency-Key": "another-request"}), http.StatusAccepted)
	if got := storedFailures(t, srv) - before; got != 14 {
		t.Errorf("stored %d failures after a second request, want 14", got)
	}
	wantStatus(t, postWithHeaders(t, srv.URL, body, map[string]string{"Idempotency-Key": "has a space"}), http.StatusBadRequest)
}

// Successes travel in the same report; an item of successes alone counts
// no failure; negative successes are refused by index.
func TestIngestTakesSuccesses(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	r := postJSON(t, srv.URL, demo.Key, `{"failures": [
		{"function": "ProcessOrders", "count": 3, "successes": 97},
		{"function": "ProcessOrders", "successes": 50},
		{"function": "ProcessOrders", "successes": -1},
		{"function": "ProcessOrders", "count": 0}
	]}`)
	wantStatus(t, r, http.StatusAccepted)
	var got struct {
		Accepted, Failures, Successes int
		Rejected                      []struct{ Index int }
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Accepted != 2 || got.Failures != 3 || got.Successes != 147 || len(got.Rejected) != 2 || got.Rejected[0].Index != 2 || got.Rejected[1].Index != 3 {
		t.Errorf("answer %+v, want 2 accepted counting 3 failures and 147 successes, items 2 and 3 rejected", got)
	}
	now := srv.Clock.Now()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), now.Add(-time.Minute), now.Add(time.Minute), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	failures, successes := 0, 0
	for _, row := range rows {
		failures, successes = failures+row.Count, successes+row.Successes
	}
	if failures != 3 || successes != 147 {
		t.Errorf("stored %d failures and %d successes, want 3 and 147", failures, successes)
	}
}

// The circuit page breaks the window's failures down by instance: the one
// a client names for HTTP reports, the writer for rows written directly.
func TestTheCircuitPageShowsWhichInstanceFails(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	for _, inst := range []string{"a1b2c3d4e5f6", "a1b2c3d4e5f6", "0f9e8d7c6b5a"} {
		n := map[string]int{"a1b2c3d4e5f6": 30, "0f9e8d7c6b5a": 2}[inst]
		body := `{"failures": [{"function": "ProcessOrders", "count": ` + strconv.Itoa(n) + `, "successes": 5}]}`
		wantStatus(t, postWithHeaders(t, srv.URL, body, map[string]string{"X-Fusebox-Instance": inst}), http.StatusAccepted)
	}
	if err := srv.App.Store.Failures.Record(t.Context(), "node-4242", []storage.Report{{App: demo.AppID, Function: "ProcessOrders", Second: srv.Clock.Now(), Count: 7}}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/circuits/" + demo.AppID + "/ProcessOrders")
	wantStatus(t, page, http.StatusOK)
	table := page.body[strings.Index(page.body, `data-testid="sources"`):]
	table = table[:strings.Index(table, "</table>")]
	rows := regexp.MustCompile(`<code>([^<]+)</code></td><td>(\d+)</td><td>(\d+)</td>`).FindAllStringSubmatch(table, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+" "+r[2]+" "+r[3])
	}
	if want := []string{"a1b2c3d4e5f6 60 10", "node-4242 7 0", "0f9e8d7c6b5a 2 5"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("by instance = %v, want %v", got, want)
	}
}

// waitOpen waits until a demo circuit is open and its trigger off. The
// fake clock moves only when the test moves it: a loop that was mid-pass
// when the test advanced it, or a lease that lapsed in a jump, waits for
// the next advance; so it nudges the clock a second at a time (at most 20,
// inside the circuit's 30 s window) while it waits.
func waitOpen(t *testing.T, srv *apptest.Server, function string) {
	t.Helper()
	nudge, nudges := time.Now().Add(500*time.Millisecond), 0
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, function)
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(nudge) && nudges < 20 {
			srv.Clock.Advance(time.Second)
			nudge, nudges = time.Now().Add(500*time.Millisecond), nudges+1
		}
		return c.State == circuit.Open && !c.Pending(), fmt.Sprintf("%s is %s (pending %v)", function, c.State, c.Pending())
	})
}

// TestOneReportCostsBoundedRows sends what a key holder could: 10,000
// items, each back-dated to a second of its own. The store gets 200 rows
// and the answer names every item it did not keep; soon after, the app's
// budget of rows per second is spent and its reports answer 429 with
// Retry-After, keeping nothing (TestTheRowBudgetIsPerAppAndCountsRows
// shows another app's budget is its own).
func TestOneReportCostsBoundedRows(t *testing.T) {
	t.Parallel()
	// One row a second refills nothing that counts while the test runs,
	// however slow the machine: the burst of 5,000 rows is what is spent.
	srv := apptest.Start(t, map[string]string{"FUSEBOX_INGEST_ROW_LIMIT": "1"})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	now := srv.Clock.Now()
	var b strings.Builder
	b.WriteString(`{"failures": [`)
	for i := range 10_000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"function": "ProcessOrders", "at": %q}`, now.Add(-time.Duration(i%3000)*time.Second).Format(time.RFC3339))
	}
	b.WriteString(`]}`)
	body := b.String()
	r := postJSON(t, srv.URL, demo.Key, body)
	wantStatus(t, r, http.StatusAccepted)
	var got struct {
		Accepted int
		Rejected []struct{ Error string }
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Accepted != 200*4 || len(got.Rejected) != 10_000-800 || !strings.Contains(got.Rejected[0].Error, "200 rows") {
		t.Fatalf("accepted %d, rejected %d (first: %+v); want the 800 items of the first 200 seconds kept", got.Accepted, len(got.Rejected), got.Rejected[:min(1, len(got.Rejected))])
	}
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), now.Add(-time.Hour), now.Add(time.Hour), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 200 {
		t.Errorf("one request wrote %d failure rows, want 200", len(rows))
	}
	// The burst is 5,000 rows: the first request spent 200 of them, so
	// the 25th of these finds the budget spent, whatever the request limit
	// says.
	limited := -1
	for i := range 40 {
		if r := postJSON(t, srv.URL, demo.Key, body); r.StatusCode == http.StatusTooManyRequests {
			if r.Header.Get("Retry-After") != "1" || !strings.Contains(r.body, "rows") {
				t.Errorf("429 without Retry-After or reason: %v %q", r.Header, r.body)
			}
			limited = i
			break
		}
	}
	if limited != 24 {
		t.Errorf("limited at request %d after the first, want 24: a burst of 5,000 rows at 200 a request", limited)
	}
}
