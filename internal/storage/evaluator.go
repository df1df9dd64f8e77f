package storage

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
)

// EvaluatorStore adapts the repositories to what circuit.Evaluator and
// circuit.Service need.
type EvaluatorStore struct{ *Store }

var (
	_ circuit.Store        = EvaluatorStore{}
	_ circuit.ServiceStore = EvaluatorStore{}
	_ circuit.VerifyStore  = EvaluatorStore{}
)

func (s EvaluatorStore) GetCircuit(ctx context.Context, appID, function string) (circuit.Circuit, error) {
	return s.Circuits.Get(ctx, appID, function)
}
func (s EvaluatorStore) GetApp(ctx context.Context, id string) (circuit.App, error) {
	return s.Apps.Get(ctx, id)
}
func (s EvaluatorStore) CreateCircuit(ctx context.Context, c circuit.Circuit) error {
	return s.Circuits.Create(ctx, c)
}
func (s EvaluatorStore) UpdateSettings(ctx context.Context, c circuit.Circuit) error {
	return s.Circuits.UpdateSettings(ctx, c)
}
func (s EvaluatorStore) DeleteCircuit(ctx context.Context, appID, function, version string) error {
	return s.Circuits.Delete(ctx, appID, function, version)
}
func (s EvaluatorStore) Acknowledge(ctx context.Context, c circuit.Circuit) error {
	return s.Circuits.Acknowledge(ctx, c)
}
func (s EvaluatorStore) Reapply(ctx context.Context, appID, function string) error {
	return s.Circuits.Reapply(ctx, appID, function)
}

func (s EvaluatorStore) ListApps(ctx context.Context) ([]circuit.App, error) { return s.Apps.List(ctx) }
func (s EvaluatorStore) ListCircuits(ctx context.Context) ([]circuit.Circuit, error) {
	return s.Circuits.List(ctx)
}
func (s EvaluatorStore) CircuitWindow(ctx context.Context, appID, function string, from, to time.Time) ([]circuit.FailureRow, error) {
	return s.Failures.CircuitWindow(ctx, appID, function, from, to)
}
func (s EvaluatorStore) PutStatus(ctx context.Context, st circuit.Status) error {
	return s.Status.PutEvaluator(ctx, st)
}
func (s EvaluatorStore) StoredStatus(ctx context.Context) (circuit.Status, error) {
	return s.Store.Status.Evaluator(ctx)
}
func (s EvaluatorStore) Flips(ctx context.Context, appID, function string, limit int) ([]circuit.Flip, error) {
	return s.Circuits.Flips(ctx, appID, function, limit)
}
func (s EvaluatorStore) Transition(ctx context.Context, f lease.Fence, c circuit.Circuit, fl circuit.Flip) error {
	return s.Circuits.Transition(ctx, f, c, fl)
}
func (s EvaluatorStore) TransitionGuarded(ctx context.Context, f lease.Fence, c circuit.Circuit, fl circuit.Flip, admit func([]circuit.Circuit, int) error) error {
	return s.Circuits.TransitionGuarded(ctx, f, c, fl, admit)
}
func (s EvaluatorStore) MarkApplied(ctx context.Context, f lease.Fence, ci circuit.Circuit, at time.Time) error {
	return s.Circuits.MarkApplied(ctx, f, ci, at)
}
func (s EvaluatorStore) SetLowered(ctx context.Context, f lease.Fence, appID, function string, episode int64, kind string, before map[string]*string) error {
	return s.Circuits.SetLowered(ctx, f, appID, function, episode, kind, before)
}
func (s EvaluatorStore) ReleaseLowered(ctx context.Context, f lease.Fence, appID, function string, episode int64, before map[string]*string, released string) error {
	return s.Circuits.ReleaseLowered(ctx, f, appID, function, episode, before, released)
}
func (s EvaluatorStore) SetApplyError(ctx context.Context, f lease.Fence, appID, function string, episode int64, problem string, attempts int, retryAt time.Time) error {
	return s.Circuits.SetApplyError(ctx, f, appID, function, episode, problem, attempts, retryAt)
}
func (s EvaluatorStore) SetConfirmation(ctx context.Context, f lease.Fence, appID, function string, episode int64, got circuit.Confirmation, at time.Time) error {
	return s.Circuits.SetConfirmation(ctx, f, appID, function, episode, got, at)
}
func (s EvaluatorStore) SetDrift(ctx context.Context, f lease.Fence, appID, function string, episode int64, drift string, now time.Time) error {
	return s.Circuits.SetDrift(ctx, f, appID, function, episode, drift, now)
}
func (s EvaluatorStore) Window(ctx context.Context, from, to time.Time) ([]circuit.FailureRow, []circuit.Rejection, error) {
	return s.Failures.Window(ctx, from, to)
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
