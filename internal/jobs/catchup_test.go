package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/jobs"
)

// A missed slot is caught up only when its circuit is known not to hold
// the trigger off: held, or unreadable, it stays owed and nothing runs.
func TestCatchUpFailsClosed(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	j := jobs.Job{ID: "j", Name: "Nightly", AppID: "orders", Function: "Nightly", Misfire: jobs.MisfireOnce}
	for _, tc := range []struct {
		name    string
		held    bool
		readErr error
		ran     bool
	}{
		{"trigger on", false, nil, true},
		{"trigger held off", true, nil, false},
		{"circuit unreadable", false, errors.New("storage: timed out"), false},
	} {
		runs := 0
		c := jobs.CatchUps{
			TriggerHeld: func(context.Context, string, string) (bool, error) { return tc.held, tc.readErr },
			Claim:       func(context.Context, string, time.Time, time.Time) (bool, error) { return true, nil },
			Run:         func(context.Context, string, string) error { runs++; return nil },
			Pings:       jobs.Recorder{Runs: discardRuns{}, Jobs: discardRuns{}, NewRunID: func() string { return "r" }},
			Audit:       func(context.Context, audit.Entry) error { return nil },
			Warn:        func(string, ...any) {},
		}
		ran, err := c.Do(t.Context(), j, now.Add(-time.Hour), now)
		if ran != tc.ran || (runs == 1) != tc.ran {
			t.Errorf("%s: ran %v (function started %d times), want %v", tc.name, ran, runs, tc.ran)
		}
		if (err != nil) != (tc.readErr != nil) {
			t.Errorf("%s: error %v", tc.name, err)
		}
	}
}

type discardRuns struct{}

func (discardRuns) Add(context.Context, string, jobs.Entry) error { return nil }
func (discardRuns) Running(context.Context, string, string, time.Time) (jobs.Entry, bool, error) {
	return jobs.Entry{}, false, nil
}
func (discardRuns) Finish(context.Context, string, jobs.Entry) error           { return nil }
func (discardRuns) TouchRead(context.Context, jobs.Job, time.Time, bool) error { return nil }
