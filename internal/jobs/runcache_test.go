package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

// storedRuns is a job's runs as the store would return them, counting
// its reads.
type storedRuns struct {
	runs  []jobs.Run
	reads int
}

func (s *storedRuns) Between(_ context.Context, _ string, from, to time.Time, limit int) ([]jobs.Run, bool, error) {
	s.reads++
	var out []jobs.Run
	for _, r := range s.runs {
		if !r.Start.Before(from) && r.Start.Before(to) {
			out = append(out, r)
		}
	}
	if len(out) > limit {
		return out[len(out)-limit:], true, nil
	}
	return out, false, nil
}

// A view of a job whose row did not change reads none of its runs and
// shows what a read would; a new run (its row changed), a /start just
// made, or a window that moved past the copy's oldest runs is read or cut
// as the store would.
func TestRunCacheReadsOnlyWhatChanged(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	store := &storedRuns{}
	for i := range 10 {
		store.runs = append(store.runs, jobs.Run{ID: string(rune('a' + i)), Start: t0.Add(time.Duration(i) * time.Hour)})
	}
	now := t0.Add(10 * time.Hour)
	c := &jobs.RunCache{Runs: store, Now: func() time.Time { return now }}
	j := jobs.Job{ID: "j", Version: "v1"}
	ctx := t.Context()
	read := func(from, to time.Time, limit int) ([]jobs.Run, bool) {
		t.Helper()
		runs, more, err := c.Between(ctx, j, from, to, limit)
		if err != nil {
			t.Fatal(err)
		}
		want, wantMore, _ := (&storedRuns{runs: store.runs}).Between(ctx, j.ID, from, to, limit)
		if !slices.Equal(runs, want) || more != wantMore {
			t.Fatalf("runs %v more %v; the store holds %v more %v", runs, more, want, wantMore)
		}
		return runs, more
	}
	read(t0, now, 100)
	read(t0, now.Add(time.Minute), 100)
	if store.reads != 1 {
		t.Errorf("a second view of an unchanged job read its runs: %d reads, want 1", store.reads)
	}
	read(t0.Add(3*time.Hour), now.Add(2*time.Minute), 100) // the week moved on
	read(t0.Add(3*time.Hour), now.Add(2*time.Minute), 4)   // fewer than the window holds
	if store.reads != 1 {
		t.Errorf("views within the copy read %d times, want 1", store.reads)
	}
	store.runs = append(store.runs, jobs.Run{ID: "k", Start: now})
	j.Version = "v2" // the ping changed the row
	if runs, _ := read(t0, now.Add(2*time.Minute), 100); len(runs) != 11 || store.reads != 2 {
		t.Errorf("after a new run: %d runs in %d reads, want 11 in 2", len(runs), store.reads)
	}
	j.LastStartAt = now.Add(-5 * time.Second) // a /start: its run may follow its row's change
	read(t0, now.Add(2*time.Minute), 100)
	read(t0, now.Add(2*time.Minute), 100)
	if store.reads != 4 {
		t.Errorf("views just after a /start read %d times, want every view read (4)", store.reads)
	}
}

// A copy read in part (more) stays read in part while it holds its oldest
// run, and becomes whole when the window has moved past it.
func TestRunCacheKeepsWhatWasLeftUnread(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	store := &storedRuns{}
	for i := range 10 {
		store.runs = append(store.runs, jobs.Run{ID: string(rune('a' + i)), Start: t0.Add(time.Duration(i) * time.Hour)})
	}
	c := &jobs.RunCache{Runs: store, Now: func() time.Time { return t0 }}
	j := jobs.Job{ID: "j", Version: "v1"}
	end := t0.Add(11 * time.Hour)
	if _, more, _ := c.Between(t.Context(), j, t0, end, 5); !more {
		t.Fatal("the store's read said nothing was left unread")
	}
	if runs, more, _ := c.Between(t.Context(), j, t0.Add(time.Hour), end, 5); !more || len(runs) != 5 {
		t.Errorf("the same window a little later: %d runs, more %v; want 5 and more", len(runs), more)
	}
	if runs, more, _ := c.Between(t.Context(), j, t0.Add(6*time.Hour), end, 5); more || len(runs) != 4 {
		t.Errorf("past the unread runs: %d runs, more %v; want 4 and none left", len(runs), more)
	}
	if store.reads != 1 {
		t.Errorf("%d reads, want 1", store.reads)
	}
}
