package alerts_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/mailer"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/storage"
)

func TestJobsGoingMissingAndRecoveringAreMailedOnce(t *testing.T) {
	r := newRig(t)
	for _, n := range []string{storage.TableJobs, storage.TableRuns} {
		if err := r.store.Service.CreateTable(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	hourly := jobs.Job{ID: "11111111-2222-4333-8444-000000000001", Name: "Hourly export", Schedule: "0 * * * *", TimeZone: "UTC",
		Grace: 5 * time.Minute, Recipients: []string{"ops@example.com"}, CreatedAt: t0.Add(-3*time.Hour - time.Minute), Status: jobs.Up}
	// A job of the open circuit orders/Process: silent while it is off.
	silenced := jobs.Job{ID: "11111111-2222-4333-8444-000000000002", Name: "Process sweep", Schedule: "0 * * * *", TimeZone: "UTC",
		AppID: "orders", Function: "Process", Recipients: []string{"ops@example.com"}, CreatedAt: t0.Add(-3 * time.Hour), Status: jobs.Up}
	for _, j := range []jobs.Job{hourly, silenced} {
		if err := r.store.Jobs.Put(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.store.Runs.Import(t.Context(), hourly.ID, []jobs.Run{{Start: t0.Add(-3 * time.Hour), End: t0.Add(-3*time.Hour + time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	smtp := mailtest.Start(t)
	scanner := jobs.NewScanner(storage.ScannerStore{Store: r.store}, r.clock, nil)
	scanner.Notify = alerts.JobNotifier(r.store.Outbox, storage.EvaluatorStore{Store: r.store})
	base, _ := url.Parse("http://fusebox.test")
	sender := alerts.NewSender(r.store.Outbox, storage.EvaluatorStore{Store: r.store},
		mailer.SMTP{Host: "127.0.0.1", Port: smtp.Port, TLS: "none", From: "fusebox@example.com"},
		mailer.Composer{Signer: r.sign, BaseURL: base, LinkTTL: time.Hour, Now: r.clock.Now},
		alerts.SenderSettings{Clock: r.clock, Jobs: mailer.JobComposer{Jobs: r.store.Jobs, BaseURL: base}})
	pass := func() {
		t.Helper()
		if err := scanner.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
		if err := sender.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
	}
	jobMails := func() []mailtest.Message {
		var out []mailtest.Message
		for _, m := range smtp.Messages() {
			if strings.Contains(m.Subject, "Job ") {
				out = append(out, m)
			}
		}
		return out
	}
	pass()
	pass()
	got := jobMails()
	if len(got) != 1 || got[0].Subject != "[Fusebox] Job Hourly export is missing" || !strings.Contains(got[0].Text, "http://fusebox.test/jobs/"+hourly.ID) {
		t.Fatalf("after the missed slots: %+v", got)
	}
	// The job runs again: one recovery mail.
	r.clock.Advance(time.Minute)
	if err := r.store.Runs.Record(t.Context(), hourly.ID, "", jobs.EventSuccess, 0, r.clock.Now(), nil); err != nil {
		t.Fatal(err)
	}
	pass()
	pass()
	got = jobMails()
	if len(got) != 2 || got[1].Subject != "[Fusebox] Job Hourly export recovered" {
		t.Errorf("after the recovery: %v", got)
	}
	for _, m := range got {
		if strings.Contains(m.Subject, "Process sweep") {
			t.Error("a job of an open circuit was mailed about")
		}
	}
}
