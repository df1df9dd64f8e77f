package errortexts_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/testenv"
)

type countingRows struct {
	mu    sync.Mutex
	reads int
	read  chan struct{} // told of each read
}

func (r *countingRows) CircuitSamples(_ context.Context, _, _ string, from, _ time.Time, _ int) ([]circuit.FailureRow, bool, error) {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
	r.read <- struct{}{}
	return []circuit.FailureRow{{Second: from, Count: 3, Sample: "Timeout after 30 s"}}, false, nil
}

// waitReads waits until n reads were made, those in the background too.
func (r *countingRows) waitReads(n int) int {
	deadline := time.After(5 * time.Second)
	for {
		r.mu.Lock()
		got := r.reads
		r.mu.Unlock()
		if got >= n {
			return got
		}
		select {
		case <-r.read:
		case <-deadline:
			return got
		}
	}
}

// An open circuit's grouping is read once and kept while its window
// stands still; a closed one's for a few seconds, then served while it is
// read again in the background; a new episode is read afresh, before the
// view.
func TestTheCacheReadsEachWindowOnce(t *testing.T) {
	rows := &countingRows{read: make(chan struct{}, 100)}
	c := &errortexts.Cache{Rows: rows, Fixed: 30 * time.Second, Moving: 5 * time.Second}
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	open := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Window: time.Minute}, State: circuit.Open, Episode: 3, ChangedAt: now.Add(-time.Minute)}
	for _, step := range []struct {
		name  string
		ci    circuit.Circuit
		at    time.Duration
		reads int
	}{
		{"first view", open, 0, 1},
		{"again", open, 29 * time.Second, 1},
		{"after Fixed", open, 30 * time.Second, 2},
		{"a new episode", func() circuit.Circuit { c := open; c.Episode = 4; return c }(), 31 * time.Second, 3},
		{"closed", func() circuit.Circuit { c := open; c.State, c.Episode = circuit.Closed, 5; return c }(), 32 * time.Second, 4},
		{"closed, again", func() circuit.Circuit { c := open; c.State, c.Episode = circuit.Closed, 5; return c }(), 36 * time.Second, 4},
		{"closed, after Moving", func() circuit.Circuit { c := open; c.State, c.Episode = circuit.Closed, 5; return c }(), 37 * time.Second, 5},
	} {
		groups, _, _, err := c.OfCircuit(t.Context(), step.ci, now.Add(step.at), 10)
		if err != nil || len(groups) != 1 || groups[0].Count != 3 {
			t.Fatalf("%s: %+v, %v", step.name, groups, err)
		}
		if got := rows.waitReads(step.reads); got != step.reads {
			t.Errorf("%s: %d reads, want %d", step.name, got, step.reads)
		}
	}
}

// stamps is a Stamper whose answer the test sets.
type stamps struct {
	mu    sync.Mutex
	stamp circuit.Stamp
	ok    bool
}

func (s *stamps) Stamp(string, time.Time, time.Time) (circuit.Stamp, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stamp, s.ok
}

func (s *stamps) set(rows int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamp, s.ok = circuit.Stamp{Rows: rows, Failures: rows}, ok
}

// With stamps, an expired grouping whose rows did not change is kept
// without a read; a change, or a stamp that cannot be had, reads again.
func TestTheCacheReadsAgainOnlyWhenTheRowsChanged(t *testing.T) {
	rows := &countingRows{read: make(chan struct{}, 100)}
	st := &stamps{}
	st.set(3, true)
	c := &errortexts.Cache{Rows: rows, Stamps: st, Moving: 5 * time.Second}
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	closed := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Window: time.Minute}, State: circuit.Closed, Episode: 2}
	for _, step := range []struct {
		name   string
		at     time.Duration
		change func()
		reads  int
	}{
		{"first view", 0, nil, 1},
		{"expired, its rows unchanged", 6 * time.Second, nil, 1},
		{"expired again, still unchanged", 12 * time.Second, nil, 1},
		{"a row added", 18 * time.Second, func() { st.set(4, true) }, 2},
		{"expired, unchanged since that read", 24 * time.Second, nil, 2},
		{"no stamp to be had (the evaluator's read is old)", 30 * time.Second, func() { st.set(4, false) }, 3},
	} {
		if step.change != nil {
			step.change()
		}
		groups, _, _, err := c.OfCircuit(t.Context(), closed, now.Add(step.at), 10)
		if err != nil || len(groups) != 1 || groups[0].Count != 3 {
			t.Fatalf("%s: %+v, %v", step.name, groups, err)
		}
		if got := rows.waitReads(step.reads); got != step.reads {
			t.Errorf("%s: %d reads, want %d", step.name, got, step.reads)
		}
		// The next step finds the background read's result kept.
		testenv.Eventually(t, 5*time.Second, func() (bool, string) {
			return !errortexts.Refreshing(c), step.name + ": the background read has not finished"
		})
	}
}
