package web_test

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/web"
)

const (
	nightly = "11111111-2222-4333-8444-555555555501"
	other   = "11111111-2222-4333-8444-555555555502"
)

// The two jobs' ping tokens: their ping URLs, apart from their ids.
var nightlyToken, otherToken = mustToken(nightly), mustToken(other)

func mustToken(id string) string {
	token, err := jobs.NewPingToken(id)
	if err != nil {
		panic(err)
	}
	return token
}

// pingServer runs Fusebox with two jobs that have no history yet.
func pingServer(t *testing.T) *apptest.Server {
	t.Helper()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_PING_KEY": "ping-key-0123456789"})
	for _, j := range []jobs.Job{
		{ID: nightly, PingToken: nightlyToken, Slug: "nightly-backup", Name: "Nightly backup", Schedule: "0 0 1 * * *", TimeZone: "UTC", CreatedAt: srv.Clock.Now()},
		{ID: other, PingToken: otherToken, Slug: "reminder-mails", Name: "Reminder mails", Schedule: "0 0 7 * * *", TimeZone: "Tokyo Standard Time", CreatedAt: srv.Clock.Now()},
	} {
		if err := srv.App.Store.Jobs.Put(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

func curl(t *testing.T, method, url, body string) response {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("User-Agent", "curl/8.5.0")
	req.Header.Set("Accept", "*/*")
	return newBrowser(t, "").do(req)
}

func runs(t *testing.T, srv *apptest.Server, id string) []storage.StoredRun {
	t.Helper()
	rs, _, err := srv.App.Store.Runs.Recent(t.Context(), id, 100, jobs.RunCursor{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestPingsWorkLikeHealthchecks(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	base := srv.URL + "/ping/" + nightlyToken

	r := curl(t, http.MethodHead, base, "")
	wantStatus(t, r, http.StatusOK)
	got := runs(t, srv, nightly)
	if len(got) != 1 || got[0].State != "ok" || !got[0].Start.Equal(got[0].End) {
		t.Fatalf("after a HEAD success ping: %+v", got)
	}

	srv.Clock.Advance(time.Minute)
	start := srv.Clock.Now()
	wantStatus(t, curl(t, http.MethodGet, base+"/start?rid=3f2a9c1e-0000-4000-8000-000000000001", ""), http.StatusOK)
	srv.Clock.Advance(90 * time.Second)
	ok := curl(t, http.MethodPost, base+"?rid=3f2a9c1e-0000-4000-8000-000000000001", "rows: 1234\nall good\n")
	wantStatus(t, ok, http.StatusOK)
	if ok.body != "OK" {
		t.Errorf("body %q, want OK", ok.body)
	}
	got = runs(t, srv, nightly)
	if len(got) != 2 || got[0].State != "ok" || !got[0].Start.Equal(start) || got[0].End.Sub(got[0].Start) != 90*time.Second || got[0].Log != "rows: 1234\nall good\n" {
		t.Fatalf("the rid-paired run: %+v", got[0])
	}

	srv.Clock.Advance(time.Minute)
	wantStatus(t, curl(t, http.MethodPost, base+"/fail", "Traceback: boom"), http.StatusOK)
	srv.Clock.Advance(time.Minute)
	wantStatus(t, curl(t, http.MethodGet, base+"/3", ""), http.StatusOK)
	srv.Clock.Advance(time.Minute)
	wantStatus(t, curl(t, http.MethodGet, base+"/0", ""), http.StatusOK)
	srv.Clock.Advance(time.Minute)
	wantStatus(t, curl(t, http.MethodPost, base+"/log", "just a note"), http.StatusOK)
	got = runs(t, srv, nightly)
	states := []string{}
	for _, r := range got {
		states = append(states, r.State)
	}
	if strings.Join(states, ",") != "log,ok,failed,failed,ok,ok" {
		t.Errorf("runs newest first: %v", states)
	}
	if got[2].ExitStatus != 3 || got[3].Log != "Traceback: boom" {
		t.Errorf("exit status %d, log %q", got[2].ExitStatus, got[3].Log)
	}
	job, _ := srv.App.Store.Jobs.Get(t.Context(), nightly)
	if !job.LastRunAt.Equal(srv.Clock.Now().Add(-time.Minute)) {
		t.Errorf("job after the pings: last run %v, want the last finish, not the log entry", job.LastRunAt)
	}

	slug := curl(t, http.MethodGet, srv.URL+"/ping/ping-key-0123456789/reminder-mails/start", "")
	wantStatus(t, slug, http.StatusOK)
	if rs := runs(t, srv, other); len(rs) != 1 || rs[0].State != "running" {
		t.Errorf("slug ping: %+v", rs)
	}
}

func TestPingsThatStoreNothing(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		says   string
	}{
		{"unknown uuid", http.MethodGet, "/ping/00000000-0000-4000-8000-000000000000", "", http.StatusNotFound, "not found"},
		{"not a uuid", http.MethodGet, "/ping/nightly", "", http.StatusNotFound, "not found"},
		{"wrong ping key", http.MethodGet, "/ping/wrong-key-0123456789/reminder-mails", "", http.StatusNotFound, "not found"},
		{"unknown slug", http.MethodGet, "/ping/ping-key-0123456789/nope", "", http.StatusNotFound, "not found"},
		{"exit status out of range", http.MethodGet, "/ping/" + otherToken + "/256", "", http.StatusBadRequest, "invalid url format"},
		{"rid that is not a uuid", http.MethodGet, "/ping/" + otherToken + "/start?rid=not-a-uuid", "", http.StatusBadRequest, "invalid uuid format"},
		{"rid with a space", http.MethodGet, "/ping/" + otherToken + "/start?rid=a%20b", "", http.StatusBadRequest, "invalid uuid format"},
		{"one of Fusebox's own loops", http.MethodPost, "/ping/f0c5b0c5-0000-4000-8000-000000000001/fail", "fake alert", http.StatusNotFound, "not found"},
		{"an unknown action", http.MethodGet, "/ping/" + otherToken + "/explode", "", http.StatusNotFound, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := curl(t, tt.method, srv.URL+tt.path, tt.body)
			wantStatus(t, r, tt.status)
			if !strings.Contains(r.body, tt.says) {
				t.Errorf("body %q does not say %q", r.body, tt.says)
			}
		})
	}
	for _, id := range []string{nightly, other} {
		if rs := runs(t, srv, id); len(rs) != 0 {
			t.Errorf("%s has %d runs after refused pings", id, len(rs))
		}
	}
}

// A paused job's ping is recorded and answered OK, as Healthchecks answers
// a check that ignores pings while paused: a crontab line with curl -f
// keeps working, and the job stays paused.
func TestAPausedJobsPingIsKeptAndTheJobStaysPaused(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	paused, _ := srv.App.Store.Jobs.Get(t.Context(), nightly)
	paused.Paused = true
	if err := srv.App.Store.Jobs.Put(t.Context(), paused); err != nil {
		t.Fatal(err)
	}
	r := curl(t, http.MethodGet, srv.URL+"/ping/"+nightlyToken, "")
	wantStatus(t, r, http.StatusOK)
	if r.body != "OK" {
		t.Errorf("body %q, want OK", r.body)
	}
	if rs := runs(t, srv, nightly); len(rs) != 1 || rs[0].State != "ok" {
		t.Errorf("runs after the ping: %+v, want it kept", rs)
	}
	if j, _ := srv.App.Store.Jobs.Get(t.Context(), nightly); !j.Paused {
		t.Error("the ping unpaused the job")
	}
}

// A slug URL with ?create=1 makes the job on its first ping (201), with
// Healthchecks' defaults for such checks; the next ping finds it (200).
func TestAFirstPingCanCreateItsJob(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	url := srv.URL + "/ping/ping-key-0123456789/db-backup?create=1"
	first := curl(t, http.MethodPost, url, "dumped 3 GB")
	wantStatus(t, first, http.StatusCreated)
	if first.body != "Created" {
		t.Errorf("body %q, want Created", first.body)
	}
	j, err := srv.App.Store.Jobs.BySlug(t.Context(), "db-backup")
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "db-backup" || j.Schedule != "every 24h" || j.Grace != time.Hour || j.TimeZone != "UTC" {
		t.Errorf("created job %+v, want Healthchecks' defaults (a day, an hour's grace)", j)
	}
	if rs := runs(t, srv, j.ID); len(rs) != 1 || rs[0].State != "ok" || rs[0].Log != "dumped 3 GB" {
		t.Errorf("runs of the created job: %+v", rs)
	}
	wantStatus(t, curl(t, http.MethodGet, url, ""), http.StatusOK)
	all, _ := srv.App.Store.Jobs.List(t.Context())
	mine := 0
	for _, j := range all {
		if !j.Internal() {
			mine++
		}
	}
	if mine != 3 {
		t.Errorf("%d jobs after two pings, want the two and the created one", mine)
	}
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/ping-key-0123456789/Not_A_Slug?create=1", ""), http.StatusBadRequest)
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/wrong-key-0123456789/other-job?create=1", ""), http.StatusNotFound)
}

// TestAJobsIDIsNoPingSecret: a job's id, which every viewer, chat channel
// and /metrics reader may see, does not ping it; its token does. A job
// made before tokens answers to its id for the grace after migration, then
// no more, and rotating its token ends that at once and retires the old
// token. A token for the right job with another secret, or for no job,
// pings nothing.
func TestAJobsIDIsNoPingSecret(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+nightly, ""), http.StatusNotFound)
	if rs := runs(t, srv, nightly); len(rs) != 0 {
		t.Fatalf("a ping by id recorded a run: %+v", rs)
	}
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+nightlyToken, ""), http.StatusOK)
	forged := mustToken(nightly) // the right job's id, another secret
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+forged+"/fail", ""), http.StatusNotFound)
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+mustToken("11111111-2222-4333-8444-5555555555ff"), ""), http.StatusNotFound)
	if rs := runs(t, srv, nightly); len(rs) != 1 || rs[0].State != "ok" {
		t.Fatalf("runs after one good ping and a forged fail: %+v", rs)
	}

	// A job migrated with a token keeps its id's URL for the grace.
	legacy := jobs.Job{ID: "11111111-2222-4333-8444-555555555503", Name: "Old cron", Schedule: "0 0 2 * * *", TimeZone: "UTC", CreatedAt: srv.Clock.Now()}
	if err := srv.App.Store.Jobs.Put(t.Context(), legacy); err != nil {
		t.Fatal(err)
	}
	if err := storage.GivePingTokens(t.Context(), srv.App.Store.Service, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := srv.App.Store.Jobs.Get(t.Context(), legacy.ID)
	if err != nil || len(got.PingToken) != jobs.PingTokenLength || !got.PingByIDSince.Equal(srv.Clock.Now()) {
		t.Fatalf("after the migration: %+v %v, want a token and the grace begun", got, err)
	}
	if again, _ := srv.App.Store.Jobs.Get(t.Context(), nightly); again.PingToken != nightlyToken || !again.PingByIDSince.IsZero() {
		t.Fatal("the migration changed a job that had its token")
	}
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+legacy.ID, ""), http.StatusOK)
	srv.Clock.Advance(jobs.DefaultPingIDGrace + time.Second)
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+legacy.ID, ""), http.StatusNotFound)
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+got.PingToken, ""), http.StatusOK)

	rotated, err := srv.App.Store.Jobs.RotatePingToken(t.Context(), legacy.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+got.PingToken, ""), http.StatusNotFound)
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+rotated, ""), http.StatusOK)
}

// TestThePingKeyCreatesABoundedNumberOfJobs: a leaked ping key with
// ?create=1 makes at most 50 jobs an hour on an instance; the 51st slug is
// answered 429 with what to do, and pings of the jobs made still count.
func TestThePingKeyCreatesABoundedNumberOfJobs(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	for i := range 50 {
		url := fmt.Sprintf("%s/ping/ping-key-0123456789/made-%d?create=1", srv.URL, i)
		wantStatus(t, curl(t, http.MethodGet, url, ""), http.StatusCreated)
	}
	over := curl(t, http.MethodGet, srv.URL+"/ping/ping-key-0123456789/made-50?create=1", "")
	wantStatus(t, over, http.StatusTooManyRequests)
	if !strings.Contains(over.body, "Jobs page") {
		t.Errorf("the refusal says %q, not how to go on", over.body)
	}
	if _, err := srv.App.Store.Jobs.BySlug(t.Context(), "made-50"); !errors.Is(err, storage.ErrNoJob) {
		t.Errorf("the 51st job was made: %v", err)
	}
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/ping-key-0123456789/made-7?create=1", ""), http.StatusOK)
}

// A daily job pinged 30 times in one slot's window keeps 10 runs; the
// rest are answered OK as Healthchecks answers them (curl -fsS --retry 5
// would fail the script on anything else), with a header saying they
// were not stored, and counted on its page. A job whose
// store holds thousands of runs (a flood before the bound) costs /jobs and
// the overview a read of what its slots may hold, and says so.
func TestAFloodOfRunsIsBoundedPerSlot(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	base := srv.URL + "/ping/" + nightlyToken
	stored, refused := 0, 0
	for range 30 {
		switch r := curl(t, http.MethodPost, base, ""); {
		case r.StatusCode == http.StatusOK && r.Header.Get(web.HeaderNotStored) == "":
			stored++
		case r.StatusCode == http.StatusOK:
			refused++
			if r.body != "OK" || !strings.Contains(r.Header.Get(web.HeaderNotStored), "not stored") {
				t.Fatalf("a ping past the bound says %q, header %q", r.body, r.Header.Get(web.HeaderNotStored))
			}
		default:
			t.Fatalf("ping: %d %s", r.StatusCode, r.body)
		}
	}
	if got := len(runs(t, srv, nightly)); stored != jobs.MaxRunsPerSlot || refused != 20 || got != jobs.MaxRunsPerSlot {
		t.Fatalf("30 pings: %d answered OK and stored, %d OK and not stored, %d runs stored; want %d, 20, %d", stored, refused, got, jobs.MaxRunsPerSlot, jobs.MaxRunsPerSlot)
	}
	operator := newBrowser(t, srv.URL)
	operator.signIn("olivia")
	if page := operator.get("/jobs/" + nightly).body; !strings.Contains(page, `data-testid="extra-runs"`) || !strings.Contains(page, "came past 10") {
		t.Errorf("the job's page does not say runs were not stored:\n%s", page)
	}
	// The count is written at most every 10 s per job and instance: the
	// first refusal at once, the rest with the next write.
	if api := operator.get("/api/v1/jobs/"+nightly, "Accept", "application/json").body; !regexp.MustCompile(`"extra_runs":[1-9]`).MatchString(api) {
		t.Errorf("the API does not count the runs not stored: %s", api)
	}

	// 5,000 runs stored in the job's last day, as a flood before the
	// bound left them.
	now := srv.Clock.Now()
	flood := make([]jobs.Run, 5000)
	for i := range flood {
		at := now.Add(-time.Duration(i+1) * 10 * time.Second)
		flood[i] = jobs.Run{ID: fmt.Sprintf("flood-%d", i), Start: at, End: at}
	}
	if err := srv.App.Store.Runs.Import(t.Context(), other, flood); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/jobs", "/"} {
		start := time.Now()
		r := operator.get(path)
		wantStatus(t, r, http.StatusOK)
		t.Logf("%s answered in %s", path, time.Since(start).Round(time.Millisecond))
		if !strings.Contains(r.body, "only its newest") {
			t.Errorf("%s does not say the flooded job's runs were read in part", path)
		}
	}
}

// A token that names a real job (whose id every viewer sees) with a wrong
// secret is refused before any storage read: 50 forged pings after a good
// one cost no read of the job, and the job's real token still pings.
func TestAForgedTokenOfARealJobCostsNoRead(t *testing.T) {
	t.Parallel()
	srv := pingServer(t)
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+nightlyToken, ""), http.StatusOK)
	b := newBrowser(t, srv.URL)
	gets := func() float64 {
		t.Helper()
		for _, line := range strings.Split(b.get("/metrics").body, "\n") {
			if v, ok := strings.CutPrefix(line, `fusebox_storage_calls_total{op="get",outcome="ok"} `); ok {
				var n float64
				fmt.Sscan(v, &n)
				return n
			}
		}
		return 0
	}
	first := gets()
	before := gets()
	scrape := before - first // what a scrape of /metrics reads itself
	for range 100 {
		wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+mustToken(nightly)+"/fail", ""), http.StatusNotFound)
	}
	// Background loops read now and then too, more on a slow machine (CI
	// once saw 11 in the time of 50 pings): a read or more per forged token
	// (69 for 50 before this bound) is what this tells apart.
	if reads := gets() - before - scrape; reads >= 50 {
		t.Errorf("100 forged tokens of a real job cost %v storage reads, want none of their own", reads)
	}
	wantStatus(t, curl(t, http.MethodGet, srv.URL+"/ping/"+nightlyToken, ""), http.StatusOK)
	if rs := runs(t, srv, nightly); len(rs) != 2 {
		t.Errorf("%d runs, want the two good pings'", len(rs))
	}
}
