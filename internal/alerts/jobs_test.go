package alerts_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/wording"
)

func TestJobsGoingMissingAndRecoveringAreMailedOnce(t *testing.T) {
	r := newRig(t)
	for _, n := range []string{storage.TableJobs, storage.TableRuns, storage.TableStatus} {
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
	pass, jobMails := r.jobAlerts(t)
	pass()
	pass()
	got := jobMails()
	if len(got) != 1 || got[0].Subject != "[Fusebox] Job Hourly export is missing" || !strings.Contains(got[0].Text, "http://fusebox.test/jobs/"+hourly.ID) {
		t.Fatalf("after the missed slots: %+v", got)
	}
	// The job runs again: one recovery mail.
	r.clock.Advance(time.Minute)
	if err := r.store.Runs.Add(t.Context(), hourly.ID, jobs.Entry{RunID: "ok", Start: r.clock.Now(), End: r.clock.Now(), State: jobs.StateOK, ExitStatus: 0}); err != nil {
		t.Fatal(err)
	}
	pass()
	pass()
	got = jobMails()
	if len(got) != 2 || got[1].Subject != "[Fusebox] Job Hourly export recovered" {
		t.Errorf("after the recovery: %v", got)
	}
	// A failure reported the way the ping API does: the run, then the job's
	// last-run time. The scanner still sees the change and mails once.
	r.clock.Advance(time.Hour) // 10:01, the run of the 10:00 slot
	if err := r.store.Runs.Add(t.Context(), hourly.ID, jobs.Entry{RunID: "failed", Start: r.clock.Now(), End: r.clock.Now(), State: jobs.StateFailed, ExitStatus: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Jobs.Touch(t.Context(), hourly.ID, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	pass()
	pass()
	got = jobMails()
	if len(got) != 3 || got[2].Subject != "[Fusebox] Job Hourly export is failing" {
		t.Errorf("after a failed run: %v", got)
	}
	for _, m := range got {
		if strings.Contains(m.Subject, "Process sweep") {
			t.Error("a job of an open circuit was mailed about")
		}
	}
	// Each change is one row of the job's flip log, with why, newest first.
	flips, err := r.store.Jobs.Flips(t.Context(), hourly.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, f := range flips {
		log = append(log, f.From.String()+"→"+f.To.String())
	}
	if strings.Join(log, " ") != "up→failing missing→up up→missing" {
		t.Errorf("flip log %v, want the three changes once each, newest first", log)
	}
	if len(flips) == 3 && (!strings.Contains(flips[2].Why, "had no run") || !strings.Contains(flips[0].Why, ": failed")) {
		t.Errorf("flip reasons: %q / %q", flips[2].Why, flips[0].Why)
	}
}

// jobAlerts wires a job scanner to a real SMTP server through the outbox.
// pass runs one scan and one send; mails lists the job mails sent so far.
func (r *rig) jobAlerts(t *testing.T) (pass func(), mails func() []mailtest.Message) {
	t.Helper()
	smtp := mailtest.Start(t)
	scanner := jobs.NewScanner(storage.ScannerStore{Store: r.store}, jobs.ScannerSettings{Clock: r.clock,
		Notify: alerts.JobNotifier(r.store.Outbox, storage.Lists{Store: r.store})})
	base, _ := url.Parse("http://fusebox.test")
	sender := alerts.NewSender(r.store.Outbox, storage.Lists{Store: r.store},
		notify.SMTP{Host: "127.0.0.1", Port: smtp.Port, TLS: "none", From: "fusebox@example.com"},
		wording.Composer{Signer: r.sign, BaseURL: base, LinkTTL: time.Hour, Now: r.clock.Now},
		alerts.SenderSettings{Clock: r.clock, Jobs: wording.JobComposer{Jobs: r.store.Jobs, BaseURL: base}})
	pass = func() {
		t.Helper()
		if err := scanner.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
		if err := sender.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
	}
	mails = func() []mailtest.Message {
		var out []mailtest.Message
		for _, m := range smtp.Messages() {
			if strings.Contains(m.Subject, "Job ") {
				out = append(out, m)
			}
		}
		return out
	}
	return pass, mails
}

func TestJobsAreSilentInAMaintenanceWindow(t *testing.T) {
	r := newRig(t)
	if err := r.store.Service.CreateTable(t.Context(), storage.TableJobs); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{storage.TableRuns, storage.TableStatus} {
		if err := r.store.Service.CreateTable(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	orders := jobs.Job{ID: "11111111-2222-4333-8444-000000000011", Name: "Orders export", AppID: "orders", Schedule: "0 * * * *", TimeZone: "UTC",
		Grace: 5 * time.Minute, Recipients: []string{"ops@example.com"}, CreatedAt: t0.Add(-4 * time.Hour), Status: jobs.Up}
	billing := orders
	billing.ID, billing.Name, billing.AppID = "11111111-2222-4333-8444-000000000012", "Billing export", "billing"
	for _, j := range []jobs.Job{orders, billing} {
		if err := r.store.Jobs.Put(t.Context(), j); err != nil {
			t.Fatal(err)
		}
		if err := r.store.Runs.Import(t.Context(), j.ID, []jobs.Run{{Start: t0.Add(-3 * time.Hour), End: t0.Add(-3*time.Hour + time.Minute)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The orders app is in maintenance over the 07:00, 08:00 and 09:00 slots.
	w := jobs.Window{ID: "w1", AppID: "orders", From: t0.Add(-150 * time.Minute), Until: t0.Add(30 * time.Minute), Reason: "database upgrade"}
	if err := r.store.Jobs.PutWindow(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	pass, mails := r.jobAlerts(t)
	r.clock.Advance(6 * time.Minute) // 09:06: the 09:00 slot is past its grace
	pass()
	got := mails()
	if len(got) != 1 || got[0].Subject != "[Fusebox] Job Billing export is missing" {
		t.Fatalf("during the orders window, want only the billing job's mail: %v", got)
	}
	if j, err := r.store.Jobs.Get(t.Context(), orders.ID); err != nil || j.Status != jobs.Up {
		t.Errorf("orders job during its window: %v (err %v), want %v: its silent slots are skipped, not missed", j.Status, err, jobs.Up)
	}
	// The window is over and the 10:00 slot goes by without a run.
	r.clock.Advance(time.Hour)
	pass()
	got = mails()
	if len(got) != 2 || got[1].Subject != "[Fusebox] Job Orders export is missing" {
		t.Errorf("after the window, want the orders job missing: %v", got)
	}
}
