package storage

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
)

// Breaker is the repositories circuit.Evaluator, circuit.Service and
// circuit.Verifier use, as they are.
func (s *Store) Breaker() circuit.Stores {
	return circuit.Stores{Apps: s.Apps, Circuits: s.Circuits, Failures: s.Failures, Status: s.Status}
}

// ScannerStore adapts the repositories to what jobs.Scanner needs.
type ScannerStore struct{ *Store }

var _ jobs.ScannerStore = ScannerStore{}

func (s ScannerStore) List(ctx context.Context) ([]jobs.Job, error) { return s.Jobs.List(ctx) }
func (s ScannerStore) Between(ctx context.Context, jobID string, from, to time.Time, limit int) ([]jobs.Run, bool, error) {
	return s.Runs.Between(ctx, jobID, from, to, limit)
}
func (s ScannerStore) AddFlip(ctx context.Context, jobID string, fl jobs.Flip) error {
	return s.Jobs.AddFlip(ctx, jobID, fl)
}
func (s ScannerStore) SetStatus(ctx context.Context, f lease.Fence, id string, st jobs.Status) error {
	return s.Jobs.SetStatus(ctx, f, id, st)
}
func (s ScannerStore) PutTally(ctx context.Context, t jobs.Tally) error {
	return s.Store.Status.PutScanner(ctx, t)
}
func (s ScannerStore) Windows(ctx context.Context) ([]jobs.Window, error) {
	return s.Jobs.Windows(ctx)
}

// Lists lists every app and every circuit, for what reads them together
// (the alert sender, the retention watch, the drain sampler).
type Lists struct{ *Store }

func (l Lists) ListApps(ctx context.Context) ([]circuit.App, error) { return l.Apps.List(ctx) }
func (l Lists) ListCircuits(ctx context.Context) ([]circuit.Circuit, error) {
	return l.Circuits.List(ctx)
}
