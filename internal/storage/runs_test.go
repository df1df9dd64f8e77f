package storage_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
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
	rec := func(ev jobs.RunEvent, at time.Time, rid string) {
		t.Helper()
		if err := rs.Record(t.Context(), "job-1", rid, ev, 0, at, nil); err != nil {
			t.Fatal(err)
		}
	}
	rec(jobs.EventStart, t0, "a")
	rec(jobs.EventLog, t0.Add(time.Minute), "")
	rec(jobs.EventSuccess, t0.Add(2*time.Minute), "a")
	rec(jobs.EventStart, t0.Add(time.Hour), "")
	rec(jobs.EventFailure, t0.Add(time.Hour+time.Minute), "") // pairs with the latest running
	rec(jobs.EventSuccess, t0.Add(2*time.Hour), "")           // a lone success
	got, err := rs.Between(t.Context(), "job-1", t0, t0.Add(2*time.Hour))
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
			if err := rs.Record(t.Context(), job, "", jobs.EventSuccess, 0, t0.Add(time.Duration(i)*time.Hour), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := rs.DeleteBefore(t.Context(), t0.Add(90*time.Minute)); err != nil || n != 4 {
		t.Errorf("DeleteBefore removed %d (err %v), want the 4 runs before 02:30", n, err)
	}
	for _, job := range []string{"job-1", "job-2"} {
		got, err := rs.Between(t.Context(), job, t0.Add(-time.Hour), t0.Add(3*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !got[0].Start.Equal(t0.Add(2*time.Hour)) {
			t.Errorf("%s keeps %+v, want only its 03:00 run", job, got)
		}
	}
}
