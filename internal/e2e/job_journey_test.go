package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// TestRealClockJobJourney walks a job going missing and recovering as a
// person lives it, on the real clock: an hourly job whose last slot
// passed its grace is found missing by the scanner and mailed; the job's
// crontab line pings; the next scan finds it up and mails the recovery;
// the job page shows it up. The scanner looks every 30 s, so this takes
// up to a minute.
func TestRealClockJobJourney(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartRealClock(t, smtp.Env())
	const id = "11111111-2222-4333-8444-555555555599"
	now := time.Now().UTC()
	// Its slot came 5 minutes ago, on a whole minute; the grace was 1 minute.
	created := now.Truncate(time.Minute).Add(-5 * time.Minute).Add(-time.Hour)
	token, err := jobs.NewPingToken(id)
	if err != nil {
		t.Fatal(err)
	}
	j := jobs.Job{ID: id, PingToken: token, Name: "Hourly export", Schedule: "every 1h", TimeZone: "UTC", Grace: time.Minute,
		Recipients: []string{"ops@example.com"}, CreatedAt: created, Status: jobs.Up, LastRunAt: created}
	if err := srv.App.Store.Jobs.Put(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	subject := func(s string) func(mailtest.Message) bool {
		return func(m mailtest.Message) bool { return m.Subject == s && m.To == "ops@example.com" }
	}
	start := time.Now()
	if _, ok := smtp.WaitFor(subject("[Fusebox] Job Hourly export is missing"), 45*time.Second); !ok {
		t.Fatalf("no missing mail within 45 s; got %v", smtp.Messages())
	}
	t.Logf("missing mail %s after the job was registered", time.Since(start).Round(time.Millisecond))

	// The crontab line runs, late, with the job's ping URL.
	resp, err := http.Get(srv.URL + "/ping/" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ping: %d", resp.StatusCode)
	}
	pinged := time.Now()
	if _, ok := smtp.WaitFor(subject("[Fusebox] Job Hourly export recovered"), 45*time.Second); !ok {
		t.Fatalf("no recovery mail within 45 s of the ping; got %v", smtp.Messages())
	}
	t.Logf("recovery mail %s after the ping", time.Since(pinged).Round(time.Millisecond))

	if got := jobStatusShown(t, srv, id); got != "up" {
		t.Errorf("the job page shows the job %q, want up", got)
	}
	onlyMissingAndRecovered(t, smtp, "Hourly export")
}

// jobStatusShown signs in as an operator and reads the job's status off
// its page.
func jobStatusShown(t *testing.T, srv *apptest.Server, id string) string {
	t.Helper()
	p := newPage(t)
	p.signIn(t, srv.URL, "victor")
	p.do(t,
		chromedp.Navigate(srv.URL+"/jobs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-status"]`)),
	)
	return p.text(t, `[data-testid="job-status"]`)
}

// onlyMissingAndRecovered fails on any mail about the job but its missing
// and recovered ones.
func onlyMissingAndRecovered(t *testing.T, smtp *mailtest.Server, name string) {
	t.Helper()
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, name) && m.Subject != "[Fusebox] Job "+name+" is missing" && m.Subject != "[Fusebox] Job "+name+" recovered" {
			t.Errorf("an unexpected mail: %q", m.Subject)
		}
	}
}
