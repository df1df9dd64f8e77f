package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

func TestRunsBetweenAreOldestFirstAndSkipLogs(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableRuns); err != nil {
		t.Fatal(err)
	}
	rs := storage.New(svc).Runs
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	starts := lastStarts{}
	pings := jobs.Recorder{Runs: rs, Jobs: starts, NewRunID: storage.NewRunID}
	rec := func(ev jobs.RunEvent, at time.Time, rid string) {
		t.Helper()
		if err := pings.Record(t.Context(), starts.job("job-1"), jobs.Ping{Event: ev, Exit: -1, RunID: rid, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	rec(jobs.EventStart, t0, "a")
	rec(jobs.EventLog, t0.Add(time.Minute), "")
	rec(jobs.EventSuccess, t0.Add(2*time.Minute), "a")
	rec(jobs.EventStart, t0.Add(time.Hour), "")
	rec(jobs.EventFailure, t0.Add(time.Hour+time.Minute), "") // pairs with the latest running
	rec(jobs.EventSuccess, t0.Add(2*time.Hour), "")           // a lone success
	got, _, err := rs.Between(t.Context(), "job-1", t0, t0.Add(2*time.Hour), jobs.MaxRunsRead)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Start.Equal(t0) || !got[0].End.Equal(t0.Add(2*time.Minute)) || got[0].Failed ||
		!got[1].Start.Equal(t0.Add(time.Hour)) || !got[1].Failed {
		t.Errorf("runs in [01:00, 03:00) = %+v; want the paired run and the failed one, oldest first, not the 03:00 one", got)
	}
}

func TestRunsDeleteBeforeKeepsNewerRunsOfEveryJob(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableRuns); err != nil {
		t.Fatal(err)
	}
	rs := storage.New(svc).Runs
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	for _, job := range []string{"job-1", "job-2"} {
		for i := range 3 {
			at := t0.Add(time.Duration(i) * time.Hour)
			if err := rs.Add(t.Context(), job, jobs.Entry{RunID: storage.NewRunID(), Start: at, End: at, State: jobs.StateOK}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := rs.DeleteBefore(t.Context(), t0.Add(90*time.Minute)); err != nil || n != 4 {
		t.Errorf("DeleteBefore removed %d (err %v), want the 4 runs before 02:30", n, err)
	}
	for _, job := range []string{"job-1", "job-2"} {
		got, _, err := rs.Between(t.Context(), job, t0.Add(-time.Hour), t0.Add(3*time.Hour), jobs.MaxRunsRead)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !got[0].Start.Equal(t0.Add(2*time.Hour)) {
			t.Errorf("%s keeps %+v, want only its 03:00 run", job, got)
		}
	}
}

// lastStarts stands in for the jobs table where only runs are tested: it
// keeps when each job's /start pings came, which job reads back.
type lastStarts map[string]time.Time

func (l lastStarts) TouchRead(_ context.Context, j jobs.Job, at time.Time, started bool) error {
	if started {
		l[j.ID] = at
	}
	return nil
}

// job is the job as a ping reads it.
func (l lastStarts) job(id string) jobs.Job { return jobs.Job{ID: id, LastStartAt: l[id]} }

// Saving a job's settings from a copy read before a ping arrived keeps the
// ping's last-run time and the scanner's status: the form never writes
// back what it did not set.
func TestUpdateSettingsKeepsWhatPingsAndTheScannerWrote(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableJobs); err != nil {
		t.Fatal(err)
	}
	js := storage.New(svc).Jobs
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	j := jobs.Job{ID: jobs.NewID(), Name: "Nightly", Schedule: "0 1 * * *", TimeZone: "UTC", Grace: time.Minute, CreatedAt: t0, Status: jobs.New}
	if err := js.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	if err := js.Create(t.Context(), j); !errors.Is(err, jobs.ErrConflict) {
		t.Errorf("a second Create of the same id: %v, want jobs.ErrConflict", err)
	}
	stale, err := js.Get(t.Context(), j.ID) // the form opens
	if err != nil {
		t.Fatal(err)
	}
	if err := js.Touch(t.Context(), j.ID, t0.Add(time.Hour)); err != nil { // a ping arrives
		t.Fatal(err)
	}
	if err := js.SetStatus(t.Context(), lease.Fence{}, j.ID, jobs.Up); err != nil { // the scanner passes
		t.Fatal(err)
	}
	stale.Name = "Nightly export"
	if err := (jobs.Catalog{Store: js}).Update(t.Context(), stale); err != nil { // the form is saved
		t.Fatal(err)
	}
	got, err := js.Get(t.Context(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Nightly export" || !got.LastRunAt.Equal(t0.Add(time.Hour)) || got.Status != jobs.Up {
		t.Errorf("after saving a stale copy: name %q, last run %s, status %s; want the new name, 02:00 and up", got.Name, got.LastRunAt, got.Status)
	}
}

// A run started and finished at times finer than storage keeps (a real
// clock's nanoseconds) is closed, not left running beside a lone finish.
func TestARunStartedAtANanosecondIsClosed(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableRuns); err != nil {
		t.Fatal(err)
	}
	rs := storage.New(svc).Runs
	starts := lastStarts{}
	pings := jobs.Recorder{Runs: rs, Jobs: starts, NewRunID: storage.NewRunID}
	start := time.Date(2026, 11, 30, 1, 0, 0, 123456789, time.UTC)
	for _, p := range []jobs.Ping{{Event: jobs.EventStart, Exit: -1, At: start}, {Event: jobs.EventSuccess, Exit: 0, At: start.Add(1500 * time.Millisecond)}} {
		if err := pings.Record(t.Context(), starts.job("job-ns"), p); err != nil {
			t.Fatalf("%v ping: %v", p.Event, err)
		}
	}
	got, _, err := rs.Between(t.Context(), "job-ns", start.Add(-time.Minute), start.Add(time.Minute), jobs.MaxRunsRead)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].End.IsZero() || got[0].Failed {
		t.Errorf("runs %+v, want one run, finished and good", got)
	}
}
