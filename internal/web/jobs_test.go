package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/testenv"
)

func TestJobPagesShowSlotsGapsAndRuns(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	list := b.get("/jobs")
	wantStatus(t, list, http.StatusOK)
	for _, want := range []string{`href="/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"`, "Nightly sales summary", "71%"} {
		if !strings.Contains(list.body, want) {
			t.Errorf("jobs list lacks %q", want)
		}
	}
	// The overview's jobs table fills the last 7 days as /jobs does.
	if overview := b.get("/"); !strings.Contains(overview.body, "71%") {
		t.Error("the overview's jobs table lacks the 7-day success of Nightly sales summary (71%)")
	}
	page := b.get("/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01")
	wantStatus(t, page, http.StatusOK)
	heat := heatmap(page.body)
	for _, want := range []string{`class="missed"`, `class="failed"`, `class="ok"`} {
		if !strings.Contains(heat, want) {
			t.Errorf("the heatmap has no %s cell", want)
		}
	}
	for _, want := range []string{`data-testid="heat-legend"`, `data-testid="gaps"`, `data-testid="runs"`, "Asia/Tokyo"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	// A ping URL records runs without a key: viewers do not get it, operators do.
	nightly, err := srv.App.Store.Jobs.Get(t.Context(), "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.body, "/ping/"+nightly.PingToken) || strings.Contains(page.body, "/ping/"+nightly.ID) {
		t.Error("a viewer is shown the job's ping URL")
	}
	op := newBrowser(t, srv.URL)
	op.signIn("olivia")
	if body := op.get("/jobs/" + nightly.ID).body; !strings.Contains(body, "/ping/"+nightly.PingToken) || strings.Contains(body, "/ping/"+nightly.ID) {
		t.Error("an operator is not shown the job's ping URL with its token, or is shown one with its id")
	}
	if strings.Count(page.body, `<span class="badge bad">missed</span>`) != 1 || strings.Count(page.body, `<span class="badge bad">failed</span>`) < 1 {
		t.Errorf("the gaps list should show the one missed night and the failed one")
	}
	// Reminder mails stopped two days ago: its missed slots read as one
	// range, in UTC and in its Tokyo time.
	reminders := b.get("/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a02").body
	if !regexp.MustCompile(`\d+ slots missed`).MatchString(reminders) || !strings.Contains(reminders, "JST") {
		t.Errorf("the missed days are not one range with the job's zone beside UTC:\n%s", testenv.GrepLines(reminders, "missed"))
	}
	if !strings.Contains(op.get("/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a02").body, `data-testid="run-slots"`) {
		t.Error("an operator cannot run one slot of a missed range")
	}
	many := b.get("/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03")
	if !strings.Contains(many.body, "Older runs") {
		t.Error("a job with many runs offers no older page")
	}
	wantStatus(t, b.get("/jobs/00000000-0000-4000-8000-000000000000"), http.StatusNotFound)
}

func TestJobFormValidatesPreviewsAndSaves(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	form := func(v url.Values) url.Values { v.Set("_csrf", b.csrf("/jobs/new")); return v }
	bad := b.post("/jobs/new", form(url.Values{"name": {"Backup"}, "schedule": {"61 * * * *"}, "time_zone": {"UTC"}, "grace": {"-5m"}, "do": {"save"}}))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, want := range []string{"minute field", "cannot be negative"} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("the form does not say %q", want)
		}
	}
	badZone := b.post("/jobs/new", form(url.Values{"name": {"Backup"}, "schedule": {"0 1 * * *"}, "time_zone": {"Atlantis"}, "do": {"save"}}))
	wantStatus(t, badZone, http.StatusUnprocessableEntity)
	if !strings.Contains(badZone.body, "unknown time zone") {
		t.Error("an unknown zone is not explained")
	}

	before, _ := srv.App.Store.Jobs.List(t.Context())
	preview := b.post("/jobs/new", form(url.Values{"name": {"Backup"}, "schedule": {"0 0 1 * * *"}, "time_zone": {"Tokyo Standard Time"}, "grace": {"10m"}, "do": {"preview"}}))
	wantStatus(t, preview, http.StatusOK)
	if strings.Count(preview.body, "<li>") != 5 || !strings.Contains(preview.body, "01:00:00 JST") || !strings.Contains(preview.body, "(16:00 UTC)") {
		t.Errorf("preview does not list five runs at 01:00 Tokyo:\n%s", preview.body)
	}
	if after, _ := srv.App.Store.Jobs.List(t.Context()); len(after) != len(before) {
		t.Errorf("a preview saved the job (%d jobs, %d before)", len(after), len(before))
	}

	saved := b.post("/jobs/new", form(url.Values{"name": {"Backup"}, "schedule": {"0 0 1 * * *"}, "time_zone": {"Tokyo Standard Time"}, "grace": {"10m"},
		"max_duration": {"1h"}, "slug": {"backup"}, "app": {"orders-demo"}, "function": {"Backup"}, "do": {"save"}}))
	wantStatus(t, saved, http.StatusSeeOther)
	loc := saved.Header.Get("Location")
	page := b.get(loc)
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(page.body, "Backup") || !strings.Contains(page.body, "grace 10m") || !strings.Contains(page.body, "runs at most 1h") {
		t.Errorf("the new job's page: %s", page.body)
	}
	edit := b.post(loc+"/edit", form(url.Values{"name": {"Backup"}, "schedule": {"every 6h"}, "time_zone": {"UTC"}, "grace": {"15m"}, "paused": {"on"}, "do": {"save"}}))
	wantStatus(t, edit, http.StatusSeeOther)
	id := strings.TrimPrefix(loc, "/jobs/")
	j, err := srv.App.Store.Jobs.Get(t.Context(), id)
	if err != nil || j.Schedule != "every 6h" || !j.Paused || j.Grace != 15*time.Minute || j.CreatedAt.IsZero() {
		t.Errorf("after edit: %+v (err %v)", j, err)
	}
}

// The loops' first passes run as soon as this instance takes their lease;
// each pass should show up as a successful run of the loop's job.
func TestFuseboxLoopsAreJobs(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	want := map[string]string{"Fusebox: failure pruner": "0 */10 * * * *", "Fusebox: failure roll-up": "*/30 * * * * *", "Fusebox: session sweeper": "0 */10 * * * *"}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		missing := loopsWithoutRuns(t, srv, want)
		return len(missing) == 0, fmt.Sprintf("these loops have no job with a successful run and a last-run time: %v", missing)
	})
}

func loopsWithoutRuns(t *testing.T, srv *apptest.Server, want map[string]string) []string {
	t.Helper()
	js, err := srv.App.Store.Jobs.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for name, sched := range want {
		found := false
		for _, j := range js {
			if j.Name != name || j.Schedule != sched {
				continue
			}
			runs, _, err := srv.App.Store.Runs.Between(t.Context(), j.ID, srv.Clock.Now().Add(-time.Minute), srv.Clock.Now().Add(time.Minute), 100)
			if err != nil {
				t.Fatal(err)
			}
			found = len(runs) > 0 && !runs[0].Failed && !j.LastRunAt.IsZero()
		}
		if !found {
			missing = append(missing, name)
		}
	}
	return missing
}

func TestMaintenanceWindowExcusesMissedSlotsUntilEnded(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	const nightly = "/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	denied := viewer.post("/jobs/maintenance", url.Values{"_csrf": {viewer.csrf("/jobs/maintenance")}, "from": {"2026-11-30T08:00"}, "until": {"2026-11-30T10:00"}, "reason": {"x"}})
	wantStatus(t, denied, http.StatusForbidden)

	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	if page := b.get(nightly); !strings.Contains(heatmap(page.body), `class="missed"`) {
		t.Fatal("the demo's nightly job has no missed slot to excuse")
	}
	form := func(v url.Values) url.Values { v.Set("_csrf", b.csrf("/jobs/maintenance")); return v }
	bad := b.post("/jobs/maintenance", form(url.Values{"app": {"orders-demo"}, "from": {"2026-11-30T10:00"}, "until": {"2026-11-30T08:00"}, "reason": {""}}))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, want := range []string{"The end must come after the start.", "Say why"} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("the form does not say %q", want)
		}
	}
	// The clock stands at 2026-11-30 09:00 UTC: cover the whole week shown.
	set := b.post("/jobs/maintenance", form(url.Values{"app": {"orders-demo"}, "from": {"2026-11-23T09:30"}, "until": {"2026-11-30T09:30"}, "reason": {"datacentre move"}}))
	wantStatus(t, set, http.StatusSeeOther)
	list := b.get("/jobs/maintenance")
	for _, want := range []string{"active", "datacentre move", "orders-demo", "olivia", "End now"} {
		if !strings.Contains(list.body, want) {
			t.Errorf("the windows page lacks %q", want)
		}
	}
	page := b.get(nightly)
	if heat := heatmap(page.body); strings.Contains(heat, `class="missed"`) || !strings.Contains(heat, `class="skipped"`) {
		t.Error("inside the window the nightly job's empty slots still show as missed, not skipped")
	}

	ws, err := srv.App.Store.Jobs.Windows(t.Context())
	if err != nil || len(ws) != 1 {
		t.Fatalf("windows %v (err %v)", ws, err)
	}
	end := b.post("/jobs/maintenance/"+ws[0].ID+"/end", form(url.Values{}))
	wantStatus(t, end, http.StatusSeeOther)
	if list := b.get("/jobs/maintenance"); !strings.Contains(list.body, "ended") || strings.Contains(list.body, "End now") {
		t.Error("the ended window is not shown as ended")
	}
	// Ended now, the window still excused the slots it covered.
	if page := b.get(nightly); strings.Contains(heatmap(page.body), `class="missed"`) {
		t.Error("ending the window brought back slots it had covered")
	}
	entries, err := srv.App.Store.Audit.Recent(t.Context(), srv.Clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	if got := strings.Join(actions, ","); !strings.Contains(got, "created maintenance window") || !strings.Contains(got, "ended maintenance window") {
		t.Errorf("audit: %s", got)
	}
}

// heatmap cuts a job page's slot heatmap out of it, leaving its key.
func heatmap(page string) string {
	_, after, ok := strings.Cut(page, `data-testid="heatmap"`)
	if !ok {
		return ""
	}
	svg, _, _ := strings.Cut(after, "</svg>")
	return svg
}

// The job's alert rules: each field refused with a message when it cannot
// be, previewed in words, saved, and shown back on the edit form.
func TestJobAlertRulesFromTheForm(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	form := func(v url.Values) url.Values {
		v.Set("_csrf", b.csrf("/jobs/new"))
		v.Set("name", "Export")
		v.Set("schedule", "0 * * * *")
		v.Set("time_zone", "UTC")
		v.Set("grace", "5m")
		return v
	}
	bad := b.post("/jobs/new", form(url.Values{"fail_after": {"0"}, "recover_after": {"many"}, "min_duration": {"2h"}, "max_duration": {"1h"}, "do": {"save"}}))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, want := range []string{"from 1 to 100", "shorter than the maximum duration (1h)"} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("the form does not say %q", want)
		}
	}
	if strings.Count(bad.body, "from 1 to 100") != 2 {
		t.Error("both thresholds should be refused, each with its message")
	}
	preview := b.post("/jobs/new", form(url.Values{"fail_after": {"3"}, "recover_after": {"2"}, "min_duration": {"30s"}, "do": {"preview"}}))
	wantStatus(t, preview, http.StatusOK)
	if !strings.Contains(preview.body, "alerts after 3 failed runs in a row; recovers after 2 good runs in a row; a run starting more than 5m late is late; a run shorter than 30s is an alert") {
		t.Errorf("the preview does not say the rules in words")
	}
	saved := b.post("/jobs/new", form(url.Values{"fail_after": {"3"}, "recover_after": {"2"}, "min_duration": {"30s"}, "do": {"save"}}))
	wantStatus(t, saved, http.StatusSeeOther)
	id := strings.TrimPrefix(saved.Header.Get("Location"), "/jobs/")
	j, err := srv.App.Store.Jobs.Get(t.Context(), id)
	if err != nil || j.FailAfter != 3 || j.RecoverAfter != 2 || j.MinDuration != 30*time.Second {
		t.Fatalf("stored %+v (err %v)", j, err)
	}
	edit := b.get("/jobs/" + id + "/edit").body
	if !strings.Contains(edit, `name="fail_after" inputmode="numeric" value="3"`) || !strings.Contains(edit, `value="30s"`) {
		t.Error("the edit form does not show the rules back")
	}
}

// Tags filter the jobs list and the API, and each tag has a status badge
// behind an unguessable key.
func TestJobTagsFiltersAndBadges(t *testing.T) {
	t.Parallel()
	srv, _, viewer := apiServer(t)
	for id, tags := range map[string][]string{
		"5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01": {"sales", "nightly"},
		"5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a02": {"mail"}, // missing in the demo
	} {
		j, err := srv.App.Store.Jobs.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		j.Tags = tags
		if err := srv.App.Store.Jobs.Put(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	list := viewer.call(http.MethodGet, "/api/v1/jobs?tag=nightly", "")
	wantStatus(t, list, http.StatusOK)
	if strings.Count(list.body, `"id":`) != 1 || !strings.Contains(list.body, "Nightly sales summary") {
		t.Errorf("?tag=nightly: %s", list.body)
	}
	if r := viewer.call(http.MethodGet, "/api/v1/jobs?tag=nope", ""); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, `"tag"`) {
		t.Errorf("an unknown tag: %d %s", r.StatusCode, r.body)
	}
	if r := viewer.call(http.MethodGet, "/api/v1/jobs?status=missing", ""); !strings.Contains(r.body, "Reminder mails") || strings.Contains(r.body, "Nightly") {
		t.Errorf("?status=missing: %s", r.body)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/jobs?tag=sales").body
	if !strings.Contains(page, "Nightly sales summary") || strings.Contains(page, "Reminder mails") {
		t.Error("the jobs page does not filter by tag")
	}
	m := regexp.MustCompile(`(http://[^<\s]+/badge/[A-Za-z0-9_-]+/)mail\.svg`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("an operator is not shown the badge URLs")
	}
	u, _ := url.Parse(m[1])
	badge := b.get(u.Path + "mail.svg")
	wantStatus(t, badge, http.StatusOK)
	if badge.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(badge.body, "mail: down") {
		t.Errorf("the mail badge: %s %s", badge.Header.Get("Content-Type"), badge.body)
	}
	shields := b.get(u.Path + "sales.json")
	if !strings.Contains(shields.body, `"schemaVersion":1`) || !strings.Contains(shields.body, `"message":"up"`) {
		t.Errorf("the Shields endpoint: %s", shields.body)
	}
	wantStatus(t, b.get("/badge/guessed-key/mail.svg"), http.StatusNotFound)
	v := newBrowser(t, srv.URL)
	v.signIn("victor")
	if strings.Contains(v.get("/jobs").body, "/badge/") {
		t.Error("a viewer is shown the badge key")
	}
}
