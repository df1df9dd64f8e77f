package web

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/jobs"
)

// failingRuns fails the reads of one job's runs.
type failingRuns struct{ bad string }

func (f failingRuns) Between(_ context.Context, jobID string, _, _ time.Time, _ int) ([]jobs.Run, bool, error) {
	if jobID == f.bad {
		return nil, false, errors.New("storage: runs of " + jobID + ": not answering")
	}
	return nil, false, nil
}

// One job whose runs cannot be read is said on its own row; the page and
// the other jobs are assessed (it made /jobs and the overview answer 503).
func TestOneJobsFailedReadMarksThatJob(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	w := &weekAssessor{runs: &jobs.RunCache{Runs: failingRuns{bad: "b"}, Now: func() time.Time { return now }}, now: func() time.Time { return now }}
	js := []jobs.Job{
		{ID: "a", Schedule: "0 0 2 * * *", TimeZone: "UTC", CreatedAt: now.Add(-72 * time.Hour)},
		{ID: "b", Schedule: "0 0 2 * * *", TimeZone: "UTC", CreatedAt: now.Add(-72 * time.Hour)},
	}
	c := echo.New().NewContext(httptest.NewRequest("GET", "/jobs", nil), httptest.NewRecorder())
	weeks, err := w.allOf(c, js, nil, nil)
	if err != nil {
		t.Fatalf("one job's failed read failed the page: %v", err)
	}
	if weeks["b"].problem == "" || weeks["a"].problem != "" || len(weeks["a"].results) == 0 {
		t.Errorf("weeks %+v; want b marked, a assessed", weeks)
	}
}
