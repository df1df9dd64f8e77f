package e2e_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// TestATimersOwnInvocationsAreItsRuns is the job journey with no ping, on
// the real clock: an hourly job linked to a timer function of the demo
// app goes missing and is mailed; then the function runs, and the host's
// own OpenTelemetry export (the official SDK's exporters, spans and
// Executed records as a host sends them) is the run: the job recovers,
// and its page shows the run, once.
func TestATimersOwnInvocationsAreItsRuns(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv, _ := apptest.SeededRealClockWith(t, smtp.Env())
	const id = "11111111-2222-4333-8444-5555555555a1"
	now := time.Now().UTC()
	created := now.Truncate(time.Minute).Add(-5 * time.Minute).Add(-time.Hour)
	token, err := jobs.NewPingToken(id)
	if err != nil {
		t.Fatal(err)
	}
	j := jobs.Job{ID: id, PingToken: token, Name: "Hourly export", AppID: demo.AppID, Function: "HourlyExport", Schedule: "every 1h", TimeZone: "UTC",
		Grace: time.Minute, Recipients: []string{"ops@example.com"}, CreatedAt: created, Status: jobs.Up, LastRunAt: created}
	if err := srv.App.Store.Jobs.Put(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	subject := func(s string) func(mailtest.Message) bool {
		return func(m mailtest.Message) bool { return m.Subject == s && m.To == "ops@example.com" }
	}
	if _, ok := smtp.WaitFor(subject("[Fusebox] Job Hourly export is missing"), 45*time.Second); !ok {
		t.Fatalf("no missing mail within 45 s; got %v", smtp.Messages())
	}

	// The timer fires, late: its host exports the invocation, as a span
	// and as an Executed record, and nobody pings.
	host := shapedHost(t, srv, demo.Shape{})
	run(t, host, "HourlyExport", 1, false)
	ran := time.Now()
	if _, ok := smtp.WaitFor(subject("[Fusebox] Job Hourly export recovered"), 45*time.Second); !ok {
		t.Fatalf("no recovery mail within 45 s of the invocation; got %v", smtp.Messages())
	}
	t.Logf("recovery mail %s after the invocation was exported", time.Since(ran).Round(time.Millisecond))

	runs, _, err := srv.App.Store.Runs.Recent(t.Context(), id, 10, jobs.RunCursor{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].State != jobs.StateOK {
		t.Fatalf("the job has %d runs (%+v), want the one invocation, succeeded, once", len(runs), runs)
	}

	if got := jobStatusShown(t, srv, id); got != "up" {
		t.Errorf("the job page shows the job %q, want up", got)
	}
	onlyMissingAndRecovered(t, smtp, "Hourly export")
}
