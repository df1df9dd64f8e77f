package storage

import (
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// SetIncrementalMargin shortens the incremental read's margin, so a test
// can let it pass in a fraction of a second of real time.
func SetIncrementalMargin(f *Failures, d time.Duration) {
	f.readMu.Lock()
	defer f.readMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inc = newIncremental(failureMargin)
	f.inc.margin = d
	f.rows, f.sorted = map[string]circuit.FailureRow{}, nil
}

// TouchBatches is how many grouped last-run writes j has sent.
func TouchBatches(j *Jobs) int64 { return j.touches.batches.Load() }
