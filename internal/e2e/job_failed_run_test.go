package e2e_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestAFailedRunFailsADailyJobAtOnce, on the real clock: a daily job made
// a moment ago, linked to a timer function, takes the function's first
// invocation as its run (none was ignored for being made less than 10 s
// before); a /fail ping hours from its slot makes it failing within one
// scan, as Healthchecks marks a check down on the signal, and the next
// good invocation recovers it. Mail tells each change.
func TestAFailedRunFailsADailyJobAtOnce(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv, _ := apptest.SeededRealClockWith(t, smtp.Env())
	const id = "11111111-2222-4333-8444-5555555555b2"
	token, err := jobs.NewPingToken(id)
	if err != nil {
		t.Fatal(err)
	}
	// Its slot is twelve hours away whatever the time now.
	slot := time.Now().UTC().Add(12 * time.Hour)
	j := jobs.Job{ID: id, PingToken: token, Name: "Nightly report", AppID: demo.AppID, Function: "NightlyReport",
		Schedule: "0 " + slot.Format("4 15") + " * * *", TimeZone: "UTC", Grace: time.Hour, FailAfter: 1, RecoverAfter: 1,
		Recipients: []string{"ops@example.com"}, CreatedAt: time.Now().UTC(), Status: jobs.New}
	if err := srv.App.Store.Jobs.Put(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	host := shapedHost(t, srv, demo.Shape{})
	run(t, host, "NightlyReport", 1, false)
	waitJobStatus(t, srv, id, jobs.Up, 45*time.Second)
	if rs, _, err := srv.App.Store.Runs.Recent(t.Context(), id, 10, jobs.RunCursor{}); err != nil || len(rs) != 1 {
		t.Fatalf("the job made a moment before the invocation has %d runs (%v), want it", len(rs), err)
	}

	resp, err := http.Post(srv.URL+"/ping/"+token+"/fail", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	failed := time.Now()
	subject := func(s string) func(mailtest.Message) bool {
		return func(m mailtest.Message) bool { return m.Subject == s && m.To == "ops@example.com" }
	}
	if _, ok := smtp.WaitFor(subject("[Fusebox] Job Nightly report is failing"), 45*time.Second); !ok {
		t.Fatalf("no failing mail within 45 s of /fail; got %v", smtp.Messages())
	}
	t.Logf("failing mail %s after /fail", time.Since(failed).Round(time.Millisecond))

	run(t, host, "NightlyReport", 1, false)
	if _, ok := smtp.WaitFor(subject("[Fusebox] Job Nightly report recovered"), 45*time.Second); !ok {
		t.Fatalf("no recovery mail within 45 s of a good invocation; got %v", smtp.Messages())
	}
	if got := jobStatusShown(t, srv, id); got != "up" {
		t.Errorf("the job page shows the job %q, want up", got)
	}
}

// waitJobStatus waits until the scanner stored the job's status as want.
func waitJobStatus(t *testing.T, srv *apptest.Server, id string, want jobs.Status, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, func() (bool, string) {
		j, err := srv.App.Store.Jobs.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Status == want, fmt.Sprintf("the job is %s, want %s", j.Status, want)
	})
}

// TestAFloodOfInvocationsStoresTenRunsASlot: a host exports 200 invocations
// of a daily job's timer function at once (a key holder flooding it): the
// job keeps 10 runs for the slot and counts the rest, and its page and
// /jobs answer.
func TestAFloodOfInvocationsStoresTenRunsASlot(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	const id = "11111111-2222-4333-8444-5555555555b3"
	token, err := jobs.NewPingToken(id)
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().UTC().Add(12 * time.Hour)
	j := jobs.Job{ID: id, PingToken: token, Name: "Daily export", AppID: demo.AppID, Function: "DailyExport",
		Schedule: "0 " + slot.Format("4 15") + " * * *", TimeZone: "UTC", Grace: time.Hour, CreatedAt: time.Now().UTC().Add(-48 * time.Hour), Status: jobs.Up}
	if err := srv.App.Store.Jobs.Put(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	host := shapedHost(t, srv, demo.Shape{NoRecords: true})
	run(t, host, "DailyExport", 200, false)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		got, err := srv.App.Store.Jobs.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return got.ExtraRuns > 0, fmt.Sprintf("no run counted past the bound: %+v", got)
	})
	rs, _, err := srv.App.Store.Runs.Recent(t.Context(), id, 100, jobs.RunCursor{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != jobs.MaxRunsPerSlot {
		t.Errorf("200 invocations stored %d runs, want %d", len(rs), jobs.MaxRunsPerSlot)
	}
	if got := jobStatusShown(t, srv, id); got == "" {
		t.Error("the job's page shows no status")
	}
}
