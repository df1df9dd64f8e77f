package errgroups_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errgroups"
)

type countingRows struct{ reads int }

func (r *countingRows) CircuitSamples(_ context.Context, _, _ string, from, _ time.Time, _ int) ([]circuit.FailureRow, bool, error) {
	r.reads++
	return []circuit.FailureRow{{Second: from, Count: 3, Sample: "Timeout after 30 s"}}, false, nil
}

// An open circuit's grouping is read once and kept while its window
// stands still; a closed one's for a few seconds; a new episode is read
// afresh.
func TestTheCacheReadsEachWindowOnce(t *testing.T) {
	rows := &countingRows{}
	c := &errgroups.Cache{Rows: rows, Fixed: 30 * time.Second, Moving: 5 * time.Second}
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	open := circuit.Circuit{AppID: "orders", Function: "Process", Window: time.Minute, State: circuit.Open, Episode: 3, ChangedAt: now.Add(-time.Minute)}
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
		if rows.reads != step.reads {
			t.Errorf("%s: %d reads, want %d", step.name, rows.reads, step.reads)
		}
	}
}
