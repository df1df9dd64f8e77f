package web_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/testenv"
)

type apiClient struct {
	t     *testing.T
	b     *browser
	token string
}

func (a apiClient) call(method, path, body string) response {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.b.base+path, strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	return a.b.do(req)
}

func apiServer(t *testing.T) (*apptest.Server, apiClient, apiClient) {
	t.Helper()
	opToken, opHash := auth.NewAPIToken()
	viewToken, viewHash := auth.NewAPIToken()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + opHash + ",dashboard:viewer:" + viewHash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return srv, apiClient{t, newBrowser(t, srv.URL), opToken}, apiClient{t, newBrowser(t, srv.URL), viewToken}
}

func TestAPICircuitLifecycle(t *testing.T) {
	t.Parallel()
	srv, op, viewer := apiServer(t)

	list := viewer.call(http.MethodGet, "/api/v1/circuits", "")
	wantStatus(t, list, http.StatusOK)
	var got struct{ Circuits []map[string]any }
	if err := json.Unmarshal([]byte(list.body), &got); err != nil || len(got.Circuits) != 4 {
		t.Fatalf("list: %v, %d circuits: %s", err, len(got.Circuits), list.body)
	}

	body := `{"app": "orders-demo", "function": "ShipParcels", "threshold": 25, "window_seconds": 60, "recipients": ["ops@example.com"]}`
	wantStatus(t, viewer.call(http.MethodPost, "/api/v1/circuits", body), http.StatusForbidden)
	created := op.call(http.MethodPost, "/api/v1/circuits", body)
	wantStatus(t, created, http.StatusCreated)
	for _, want := range []string{`"state":"closed"`, `"threshold":25`, `"window_seconds":60`, `"recipients":["ops@example.com"]`} {
		if !strings.Contains(created.body, want) {
			t.Errorf("created circuit lacks %s: %s", want, created.body)
		}
	}
	wantStatus(t, op.call(http.MethodPost, "/api/v1/circuits", body), http.StatusConflict)

	bad := op.call(http.MethodPost, "/api/v1/circuits", `{"app": "nope", "function": "1x", "threshold": 0, "window_seconds": -5}`)
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	var v struct{ Fields map[string]string }
	json.Unmarshal([]byte(bad.body), &v)
	for _, f := range []string{"app", "function", "threshold", "window"} {
		if v.Fields[f] == "" {
			t.Errorf("no message for %s: %s", f, bad.body)
		}
	}

	upd := op.call(http.MethodPut, "/api/v1/circuits/orders-demo/ShipParcels", `{"threshold": 50, "window_seconds": 30, "auto_resume": true, "cooldown_seconds": 300}`)
	wantStatus(t, upd, http.StatusOK)
	if !strings.Contains(upd.body, `"threshold":50`) || !strings.Contains(upd.body, `"auto_resume":true`) {
		t.Errorf("update: %s", upd.body)
	}

	trip := op.call(http.MethodPost, "/api/v1/circuits/orders-demo/ShipParcels/trip", `{"reason": "carrier outage"}`)
	wantStatus(t, trip, http.StatusOK)
	if !strings.Contains(trip.body, `"state":"forced-open"`) || !strings.Contains(trip.body, `"reason":"carrier outage"`) || !strings.Contains(trip.body, `"actor":"deploy-bot"`) {
		t.Errorf("trip: %s", trip.body)
	}
	wantStatus(t, op.call(http.MethodDelete, "/api/v1/circuits/orders-demo/ShipParcels", ""), http.StatusConflict)
	wantStatus(t, op.call(http.MethodPost, "/api/v1/circuits/orders-demo/ShipParcels/resume", ""), http.StatusOK)
	// Deleting waits until the trigger is back on: a closed circuit whose
	// switch has not applied its episode yet (written so: the evaluator,
	// woken by the resume, applies it within moments) is refused.
	ship := srv.WaitCircuit(t, "orders-demo", "ShipParcels", "resumed and applied", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })
	ship.Episode++
	if err := srv.App.Store.Circuits.Put(t.Context(), ship); err != nil {
		t.Fatal(err)
	}
	if got := op.call(http.MethodDelete, "/api/v1/circuits/orders-demo/ShipParcels", ""); got.StatusCode != http.StatusConflict || !strings.Contains(got.body, "being switched") {
		t.Errorf("deleting a circuit whose switch is pending: %d %s", got.StatusCode, got.body)
	}
	wantStatus(t, op.call(http.MethodDelete, "/api/v1/circuits/orders-demo/ProcessOrders", ""), http.StatusNoContent)
	wantStatus(t, op.call(http.MethodGet, "/api/v1/circuits/orders-demo/ProcessOrders", ""), http.StatusNotFound)
}

func TestAPIRefusesStrangers(t *testing.T) {
	t.Parallel()
	srv, _, _ := apiServer(t)
	stranger := apiClient{t, newBrowser(t, srv.URL), "fbt_not-a-real-token"}
	wantStatus(t, stranger.call(http.MethodGet, "/api/v1/circuits", ""), http.StatusUnauthorized)
	anonymous := apiClient{t, newBrowser(t, srv.URL), ""}
	wantStatus(t, anonymous.call(http.MethodGet, "/api/v1/circuits", ""), http.StatusUnauthorized)

	// A signed-in browser may use the API, but changes need the CSRF header.
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	session := apiClient{t, b, ""}
	wantStatus(t, session.call(http.MethodGet, "/api/v1/circuits", ""), http.StatusOK)
	wantStatus(t, session.call(http.MethodPost, "/api/v1/circuits/orders-demo/ProcessOrders/trip", ""), http.StatusForbidden)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/circuits/orders-demo/ProcessOrders/trip", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-CSRF-Token", b.csrf("/"))
	wantStatus(t, b.do(req), http.StatusOK)
}

func TestAPIJobs(t *testing.T) {
	t.Parallel()
	_, op, viewer := apiServer(t)
	list := viewer.call(http.MethodGet, "/api/v1/jobs", "")
	wantStatus(t, list, http.StatusOK)
	var got struct {
		Jobs []struct {
			ID, Name, Status string
			Success7d        *float64 `json:"success_7d"`
			NextRunAt        *string  `json:"next_run_at"`
		}
	}
	if err := json.Unmarshal([]byte(list.body), &got); err != nil || len(got.Jobs) != 3 {
		t.Fatalf("list: %v; want the 3 demo jobs (Fusebox's own loops are admins'): %s", err, list.body)
	}
	if all := op.call(http.MethodGet, "/api/v1/jobs", ""); strings.Count(all.body, `"name":"Fusebox:`) != 13 {
		t.Errorf("an admin's token does not list Fusebox's 13 loops: %.500s", all.body)
	}
	for _, j := range got.Jobs {
		if strings.HasPrefix(j.Name, "Fusebox:") {
			continue // created just now: no slot due yet
		}
		if j.Success7d == nil || j.NextRunAt == nil {
			t.Errorf("%s lacks success_7d or next_run_at", j.Name)
		}
	}
	show := viewer.call(http.MethodGet, "/api/v1/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01", "")
	wantStatus(t, show, http.StatusOK)
	if !strings.Contains(show.body, `"status":"missed"`) || !strings.Contains(show.body, `"status":"failed"`) {
		t.Errorf("gaps missing: %s", show.body)
	}

	page1 := viewer.call(http.MethodGet, "/api/v1/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03/runs?limit=10", "")
	wantStatus(t, page1, http.StatusOK)
	var p1 struct {
		Runs       []struct{ Start string }
		NextCursor string `json:"next_cursor"`
	}
	json.Unmarshal([]byte(page1.body), &p1)
	if len(p1.Runs) != 10 || p1.NextCursor == "" {
		t.Fatalf("first page: %d runs, cursor %q", len(p1.Runs), p1.NextCursor)
	}
	page2 := viewer.call(http.MethodGet, "/api/v1/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03/runs?limit=10&cursor="+p1.NextCursor, "")
	var p2 struct{ Runs []struct{ Start string } }
	json.Unmarshal([]byte(page2.body), &p2)
	if len(p2.Runs) != 10 || p2.Runs[0].Start >= p1.Runs[9].Start {
		t.Errorf("the second page does not continue the first: %v after %v", p2.Runs[0].Start, p1.Runs[9].Start)
	}
	wantStatus(t, viewer.call(http.MethodGet, "/api/v1/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03/runs?cursor=garbage", ""), http.StatusBadRequest)

	body := `{"name": "Hourly export", "schedule": "0 * * * *", "time_zone": "Europe/Berlin", "grace": "5m"}`
	wantStatus(t, viewer.call(http.MethodPost, "/api/v1/jobs", body), http.StatusForbidden)
	bad := op.call(http.MethodPost, "/api/v1/jobs", `{"name": "", "schedule": "0 * * *", "time_zone": "Europe/Berlin", "grace": "soon"}`)
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, f := range []string{`"name"`, `"schedule"`, `"grace"`} {
		if !strings.Contains(bad.body, f) {
			t.Errorf("no message for %s: %s", f, bad.body)
		}
	}
	created := op.call(http.MethodPost, "/api/v1/jobs", body)
	wantStatus(t, created, http.StatusCreated)
	var job struct {
		ID      string
		PingURL string `json:"ping_url"`
	}
	json.Unmarshal([]byte(created.body), &job)
	token := job.PingURL[strings.LastIndex(job.PingURL, "/")+1:]
	if id, ok := jobs.PingTokenJob(token); job.ID == "" || !ok || id != job.ID || strings.Contains(job.PingURL, job.ID) {
		t.Errorf("created: %s: want a ping URL with the job's token, not its id", created.body)
	}
	// A slug names one job: a ping by slug must not feed two.
	clash := op.call(http.MethodPost, "/api/v1/jobs", `{"name": "Copy", "slug": "nightly-sales-summary", "schedule": "0 * * * *", "time_zone": "UTC", "grace": "5m"}`)
	wantStatus(t, clash, http.StatusUnprocessableEntity)
	if !strings.Contains(clash.body, `"slug":"the job \"Nightly sales summary\" already answers to this slug"`) {
		t.Errorf("a second job with a taken slug: %s", clash.body)
	}
	upd := op.call(http.MethodPut, "/api/v1/jobs/"+job.ID, `{"name": "Hourly export", "schedule": "30 * * * *", "time_zone": "UTC", "grace": "2m", "paused": true}`)
	wantStatus(t, upd, http.StatusOK)
	if !strings.Contains(upd.body, `"paused":true`) || !strings.Contains(upd.body, `"schedule":"30 * * * *"`) {
		t.Errorf("update: %s", upd.body)
	}
}

// A deploy pipeline silences an app's jobs for half an hour, then ends the
// window when it is done.
func TestAPIMaintenanceWindows(t *testing.T) {
	t.Parallel()
	srv, op, viewer := apiServer(t)
	body := `{"app": "orders-demo", "duration": "30m", "reason": "deploy 1.4.2"}`
	wantStatus(t, viewer.call(http.MethodPost, "/api/v1/maintenance", body), http.StatusForbidden)
	bad := op.call(http.MethodPost, "/api/v1/maintenance", `{"app": "nope", "duration": "-5m", "reason": ""}`)
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if !strings.Contains(bad.body, `"duration"`) {
		t.Errorf("a negative duration is not explained: %s", bad.body)
	}
	tooLong := op.call(http.MethodPost, "/api/v1/maintenance", `{"app": "nope", "duration": "200h", "reason": ""}`)
	wantStatus(t, tooLong, http.StatusUnprocessableEntity)
	for _, f := range []string{`"app"`, `"until"`, `"reason"`} {
		if !strings.Contains(tooLong.body, f) {
			t.Errorf("no message for %s: %s", f, tooLong.body)
		}
	}
	wantStatus(t, op.call(http.MethodPost, "/api/v1/maintenance", `{"from": "tomorrow"}`), http.StatusBadRequest)

	created := op.call(http.MethodPost, "/api/v1/maintenance", body)
	wantStatus(t, created, http.StatusCreated)
	var w struct{ ID, App, State, Until string }
	json.Unmarshal([]byte(created.body), &w)
	if w.App != "orders-demo" || w.State != "active" || w.Until != srv.Clock.Now().Add(30*time.Minute).UTC().Format(time.RFC3339) {
		t.Errorf("created %s", created.body)
	}
	list := viewer.call(http.MethodGet, "/api/v1/maintenance", "")
	wantStatus(t, list, http.StatusOK)
	if !strings.Contains(list.body, w.ID) || !strings.Contains(list.body, "deploy 1.4.2") {
		t.Errorf("list: %s", list.body)
	}
	srv.Clock.Advance(10 * time.Minute)
	ended := op.call(http.MethodPost, "/api/v1/maintenance/"+w.ID+"/end", "")
	wantStatus(t, ended, http.StatusOK)
	if !strings.Contains(ended.body, `"state":"ended"`) {
		t.Errorf("ended: %s", ended.body)
	}
	wantStatus(t, op.call(http.MethodPost, "/api/v1/maintenance/no-such-window/end", ""), http.StatusNotFound)
}

// A recurring window through the API: its coming openings in the answer,
// an expression that never fires refused by field, and the job page
// listing it.
func TestAPIRecurringMaintenance(t *testing.T) {
	t.Parallel()
	srv, op, _ := apiServer(t)
	bad := op.call(http.MethodPost, "/api/v1/maintenance", `{"recurs": "0 2 30 2 *", "duration": "2h", "reason": "never"}`)
	if bad.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(bad.body, `"recurs"`) {
		t.Errorf("a window that never fires: %d %s", bad.StatusCode, bad.body)
	}
	noLength := op.call(http.MethodPost, "/api/v1/maintenance", `{"recurs": "0 2 * * 0", "reason": "backups"}`)
	if noLength.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(noLength.body, `"duration"`) {
		t.Errorf("a recurring window without a duration: %d %s", noLength.StatusCode, noLength.body)
	}
	ok := op.call(http.MethodPost, "/api/v1/maintenance", `{"app": "orders-demo", "recurs": "0 2 * * 0", "time_zone": "Europe/Berlin", "duration": "2h", "reason": "weekly backups"}`)
	wantStatus(t, ok, http.StatusCreated)
	var w struct {
		State string
		Next  []time.Time
	}
	if err := json.Unmarshal([]byte(ok.body), &w); err != nil || len(w.Next) != 5 || w.Next[0].Weekday() != time.Sunday {
		t.Fatalf("created %s (err %v): want five coming Sunday openings", ok.body, err)
	}
	if w.Next[0].UTC().Hour() != 1 { // 02:00 in Berlin in winter is 01:00 UTC
		t.Errorf("first opening %s, want 02:00 Europe/Berlin", w.Next[0])
	}
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01").body
	if !strings.Contains(page, "every 0 2 * * 0 (Europe/Berlin) for 2h: weekly backups; next Sun") {
		t.Errorf("the job page does not list the recurring window:\n%s", testenv.GrepLines(page, "every"))
	}
}

// The API resumes a storm's circuits in one call with one reason: each
// that was open gets its own flip to a new episode; one that was not is
// said so and stops none of the others; a malformed name, no reason or a
// viewer's token changes nothing.
func TestAPIResumesAStormInOneCall(t *testing.T) {
	t.Parallel()
	srv, op, viewer := apiServer(t)
	body := `{"circuits": ["orders-demo/SyncInventory", "orders-demo/ImportPrices", "orders-demo/ProcessOrders"], "reason": "supplier API back"}`
	wantStatus(t, viewer.call(http.MethodPost, "/api/v1/circuits/resume", body), http.StatusForbidden)
	wantStatus(t, op.call(http.MethodPost, "/api/v1/circuits/resume", `{"circuits": ["orders-demo/SyncInventory"]}`), http.StatusUnprocessableEntity)
	wantStatus(t, op.call(http.MethodPost, "/api/v1/circuits/resume", `{"circuits": ["SyncInventory"], "reason": "x"}`), http.StatusUnprocessableEntity)
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory"); c.State != circuit.Open {
		t.Fatalf("a refused call changed SyncInventory to %s", c.State)
	}
	res := op.call(http.MethodPost, "/api/v1/circuits/resume", body)
	wantStatus(t, res, http.StatusOK)
	var got struct {
		Results []struct {
			Circuit, State, Error string
			Episode               int64
		}
	}
	if err := json.Unmarshal([]byte(res.body), &got); err != nil || len(got.Results) != 3 {
		t.Fatalf("%v: %s", err, res.body)
	}
	want := []struct {
		state   string
		episode int64
		err     string
	}{{"closed", 4, ""}, {"closed", 2, ""}, {"", 0, "nothing to resume"}}
	for i, w := range want {
		r := got.Results[i]
		if r.State != w.state || r.Episode != w.episode || (w.err == "") != (r.Error == "") || !strings.Contains(r.Error, w.err) {
			t.Errorf("%s: %+v, want state %q, episode %d, error containing %q", r.Circuit, r, w.state, w.episode, w.err)
		}
	}
	for _, fn := range []string{"SyncInventory", "ImportPrices"} {
		flips, err := srv.App.Store.Circuits.Flips(t.Context(), demo.AppID, fn, 1)
		if err != nil || len(flips) != 1 || flips[0].Actor != "deploy-bot" || !strings.Contains(flips[0].Reason, "supplier API back") {
			t.Errorf("%s's last flip: %+v (%v), want deploy-bot's resume with the reason", fn, flips, err)
		}
	}
}

// TestAPIApps: viewers list and read apps, their secrets only as set or
// not; operators register one (its key in that answer only) and change
// its settings; a body that would move an app is refused field by field.
func TestAPIApps(t *testing.T) {
	t.Parallel()
	_, op, viewer := apiServer(t)
	body := `{"id": "billing", "display_name": "Billing", "switch": "arm", "subscription": "00000000-0000-4000-8000-000000000001", "resource_group": "billing",
		"site": "func-billing", "guardrail_max": 2, "host_storage": "https://billingstore.blob.core.windows.net"}`
	wantStatus(t, viewer.call(http.MethodPost, "/api/v1/apps", body), http.StatusForbidden)
	created := op.call(http.MethodPost, "/api/v1/apps", body)
	wantStatus(t, created, http.StatusCreated)
	var reg struct {
		App map[string]any
		Key string
	}
	if err := json.Unmarshal([]byte(created.body), &reg); err != nil || !strings.HasPrefix(reg.Key, "fbx_") || reg.App["host_storage_set"] != true {
		t.Fatalf("register: %v %s", err, created.body)
	}
	wantStatus(t, op.call(http.MethodPost, "/api/v1/apps", body), http.StatusUnprocessableEntity)

	list := viewer.call(http.MethodGet, "/api/v1/apps", "")
	wantStatus(t, list, http.StatusOK)
	if strings.Contains(list.body, "billingstore") || strings.Contains(list.body, reg.Key) {
		t.Errorf("the list shows a secret: %s", list.body)
	}
	var apps []map[string]any
	if err := json.Unmarshal([]byte(list.body), &apps); err != nil || len(apps) != 2 || apps[0]["id"] != "billing" || apps[1]["id"] != demo.AppID {
		t.Fatalf("list: %v %s; want billing and the demo app, by id", err, list.body)
	}

	upd := op.call(http.MethodPut, "/api/v1/apps/billing", `{"id": "billing", "display_name": "Billing (EU)", "switch": "arm", "subscription": "00000000-0000-4000-8000-000000000001",
		"resource_group": "billing", "site": "func-billing", "guardrail_max": 3, "guardrail_share_percent": 50}`)
	wantStatus(t, upd, http.StatusOK)
	for _, want := range []string{`"display_name":"Billing (EU)"`, `"guardrail_max":3`, `"guardrail_share_percent":50`, `"host_storage_set":true`} {
		if !strings.Contains(upd.body, want) {
			t.Errorf("after PUT the app lacks %s (an omitted secret is kept): %s", want, upd.body)
		}
	}
	moved := op.call(http.MethodPut, "/api/v1/apps/billing", `{"id": "billing", "switch": "arm", "subscription": "00000000-0000-4000-8000-000000000001", "resource_group": "billing", "site": "func-billing-2"}`)
	wantStatus(t, moved, http.StatusUnprocessableEntity)
	if !strings.Contains(moved.body, `"site"`) {
		t.Errorf("moving the app is not refused on its site: %s", moved.body)
	}
	wantStatus(t, viewer.call(http.MethodPut, "/api/v1/apps/billing", `{"id": "billing"}`), http.StatusForbidden)
	wantStatus(t, viewer.call(http.MethodGet, "/api/v1/apps/nope", ""), http.StatusNotFound)
}

// TestAPIJobDelete: an operator deletes a job, audited, and it is gone
// from the list and from pings; a viewer cannot; Fusebox's own loops'
// jobs stay.
func TestAPIJobDelete(t *testing.T) {
	t.Parallel()
	srv, op, viewer := apiServer(t)
	const id = "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a02" // the demo's Reminder mails
	wantStatus(t, viewer.call(http.MethodDelete, "/api/v1/jobs/"+id, ""), http.StatusForbidden)
	wantStatus(t, op.call(http.MethodDelete, "/api/v1/jobs/"+id, ""), http.StatusNoContent)
	wantStatus(t, op.call(http.MethodGet, "/api/v1/jobs/"+id, ""), http.StatusNotFound)
	wantStatus(t, op.call(http.MethodDelete, "/api/v1/jobs/"+id, ""), http.StatusNotFound)
	if list := viewer.call(http.MethodGet, "/api/v1/jobs", ""); strings.Contains(list.body, id) {
		t.Errorf("the deleted job is still listed: %s", list.body)
	}
	entries, err := srv.App.Store.Audit.Recent(t.Context(), srv.Clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(entries, func(e audit.Entry) bool {
		return e.Action == "deleted job" && e.Target == "Reminder mails" && e.Actor == "deploy-bot"
	}) {
		t.Errorf("the audit %+v does not say deploy-bot deleted job Reminder mails", entries)
	}
	var loops struct{ Jobs []struct{ ID string } }
	_ = json.Unmarshal([]byte(viewer.call(http.MethodGet, "/api/v1/jobs", "").body), &loops)
	for _, j := range loops.Jobs {
		if jobs.InternalID(j.ID) {
			wantStatus(t, op.call(http.MethodDelete, "/api/v1/jobs/"+j.ID, ""), http.StatusConflict)
			break
		}
	}
}
