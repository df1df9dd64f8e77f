package storage_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestInvocationsAreRunsOfTheJobsThatNameThem: a timer function's
// invocations, as its host exported them, become runs of the job that
// names its app and function (a failed one with its error as the log),
// of no other job; the same invocation taken again is one run; an export
// holding more invocations than a timer makes keeps MaxInvocationRuns.
func TestInvocationsAreRunsOfTheJobsThatNameThem(t *testing.T) {
	svc, _ := testenv.Storage(t)
	for _, table := range []string{storage.TableRuns, storage.TableJobs} {
		if err := svc.CreateTable(t.Context(), table); err != nil {
			t.Fatal(err)
		}
	}
	st := storage.New(svc)
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	for _, j := range []jobs.Job{
		{ID: "nightly", Name: "Nightly", AppID: "orders", Function: "Nightly", Schedule: "every 24h", TimeZone: "UTC", CreatedAt: t0.Add(-48 * time.Hour)},
		{ID: "other-app", Name: "Nightly elsewhere", AppID: "billing", Function: "Nightly", Schedule: "every 24h", TimeZone: "UTC", CreatedAt: t0.Add(-48 * time.Hour)},
		{ID: "pinged", Name: "Pinged", Schedule: "every 24h", TimeZone: "UTC", CreatedAt: t0.Add(-48 * time.Hour)},
	} {
		if err := st.Jobs.Put(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	v := &jobs.Invocations{Jobs: st.Jobs, Runs: jobs.Recorder{Runs: st.Runs, Jobs: st.Jobs, NewRunID: storage.NewRunID}, Now: func() time.Time { return t0 }}
	invs := []jobs.Invocation{
		{Function: "Nightly", ID: "4f1e0c2a-0000-4000-8000-000000000001", Start: t0, End: t0.Add(90 * time.Second), Failed: true, Error: "The store did not answer within 30 s."},
		{Function: "ProcessOrders", ID: "4f1e0c2a-0000-4000-8000-000000000002", Start: t0, End: t0.Add(time.Second)},
	}
	for range 2 { // the second time: the export sent again, or to another instance
		kept, skipped, err := v.Take(t.Context(), "orders", invs)
		if err != nil || kept != 1 || skipped != 0 {
			t.Fatalf("Take = %d kept, %d skipped, %v; want the one run of Nightly", kept, skipped, err)
		}
	}
	runs, _, err := st.Runs.Recent(t.Context(), "nightly", 10, jobs.RunCursor{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("the job has %d runs, want 1: %+v", len(runs), runs)
	}
	if r := runs[0]; r.State != jobs.StateFailed || !r.Start.Equal(t0) || !r.End.Equal(t0.Add(90*time.Second)) || r.Log != "The store did not answer within 30 s." {
		t.Errorf("the run is %+v; want failed, 01:00:00 to 01:01:30, with the error as its log", r)
	}
	j, err := st.Jobs.Get(t.Context(), "nightly")
	if err != nil || !j.LastRunAt.Equal(t0.Add(90*time.Second)) {
		t.Errorf("the job's last run is %s (%v), want the invocation's end", j.LastRunAt, err)
	}
	for _, other := range []string{"other-app", "pinged"} {
		if runs, _, err := st.Runs.Recent(t.Context(), other, 10, jobs.RunCursor{}); err != nil || len(runs) != 0 {
			t.Errorf("job %s has %d runs (%v), want none: the invocation was another app's", other, len(runs), err)
		}
	}

	many := make([]jobs.Invocation, jobs.MaxInvocationRuns+10)
	for i := range many {
		at := t0.Add(time.Hour + time.Duration(i)*time.Second)
		many[i] = jobs.Invocation{Function: "Nightly", ID: fmt.Sprintf("many-%d", i), Start: at, End: at}
	}
	if kept, skipped, err := v.Take(t.Context(), "orders", many); err != nil || kept != jobs.MaxInvocationRuns || skipped != 10 {
		t.Errorf("an export of %d invocations kept %d runs and skipped %d (%v); want %d and 10", len(many), kept, skipped, err, jobs.MaxInvocationRuns)
	}
}
