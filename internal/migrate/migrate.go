// Package migrate applies ordered, versioned schema steps to Table Storage.
//
// The applied version lives in one row of the Schema table. An instance
// that finds work to do takes the "migrations" lease, rereads the version,
// applies the missing steps in order under the lease's context, recording
// the version after each with a conditional write, and releases the lease.
// Others wait for the lease, then find nothing left to do, so two instances
// starting together apply each step once.
//
// What it guarantees: a step is recorded as applied only after it returned
// without error, and a failed step leaves the version where it was, so the
// next start retries it. What it does not: if an instance dies mid-step the
// step runs again once the lease expires, so steps must be safe to repeat
// (create-if-missing, transform-if-untransformed).
package migrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Step is one change to the schema or data. Apply must be safe to repeat.
type Step struct {
	Version int
	Name    string
	Apply   func(ctx context.Context, svc *tablestore.Service) error
}

// Settings tune a Runner.
type Settings struct {
	// Locker takes the "migrations" lease. Required.
	Locker *lease.Locker
	// Now is the wall clock, used only for the times recorded in the row.
	// Default time.Now.
	Now func() time.Time
	// Logger reports progress. Default: discard.
	Logger *slog.Logger
}

// LeaseName is the lease migrations run under.
const LeaseName = "migrations"

// Runner applies a list of steps.
type Runner struct {
	svc   *tablestore.Service
	table *tablestore.Table
	steps []Step
	s     Settings
}

// TableName is the logical name of the table that records the version.
const TableName = "Schema"

// New checks the steps (versions strictly increasing from 1, each with a
// name and a function) and fills in defaults.
func New(svc *tablestore.Service, steps []Step, s Settings) (*Runner, error) {
	for i, st := range steps {
		switch {
		case st.Version != i+1:
			return nil, fmt.Errorf("migrate: step %d (%q) has version %d; versions must run 1, 2, 3... without gaps", i+1, st.Name, st.Version)
		case st.Name == "" || st.Apply == nil:
			return nil, fmt.Errorf("migrate: step %d needs a name and an Apply function", st.Version)
		}
	}
	if s.Locker == nil {
		return nil, errors.New("migrate: a Locker is required")
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{svc: svc, table: svc.Table(TableName), steps: slices.Clone(steps), s: s}, nil
}

// Latest is the version the steps lead to.
func (r *Runner) Latest() int { return len(r.steps) }

type schemaRow struct {
	tablestore.Meta
	Version     int32
	LastError   string
	LastErrorAt time.Time
	UpdatedAt   time.Time
	AppliedBy   string // the lease holder that applied the last step
}

const (
	schemaPK = "schema"
	schemaRK = "version"
)

// Current returns the applied version (0 when nothing has run yet).
func (r *Runner) Current(ctx context.Context) (int, error) {
	var row schemaRow
	err := r.table.Get(ctx, schemaPK, schemaRK, &row)
	switch {
	case errors.Is(err, tablestore.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("migrate: read version: %w", err)
	}
	return int(row.Version), nil
}

// Apply brings the schema to the latest version and returns the versions
// this call applied (none when another instance did the work).
func (r *Runner) Apply(ctx context.Context) ([]int, error) {
	if err := r.svc.CreateTable(ctx, TableName); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	row, err := r.readOrCreate(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.check(row); err != nil || int(row.Version) == r.Latest() {
		return nil, err
	}
	held, err := r.s.Locker.TryAcquire(ctx, LeaseName)
	if errors.Is(err, lease.ErrHeld) {
		r.s.Logger.Info("waiting for another instance to finish migrating", "version", row.Version)
		held, err = r.s.Locker.Acquire(ctx, LeaseName)
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: take the %s lease: %w", LeaseName, err)
	}
	defer func() {
		releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := held.Release(releaseCtx); err != nil {
			r.s.Logger.Warn("migrate: release the lease", "error", err)
		}
	}()
	// Reread: whoever held the lease before may have done the work.
	if row, err = r.readOrCreate(ctx); err != nil {
		return nil, err
	}
	if err := r.check(row); err != nil {
		return nil, err
	}
	return r.applyHeld(held.Context(), &row)
}

func (r *Runner) check(row schemaRow) error {
	if int(row.Version) > r.Latest() {
		return fmt.Errorf("migrate: storage is at version %d but this build knows only %d; run a newer Fusebox", row.Version, r.Latest())
	}
	return nil
}

func (r *Runner) readOrCreate(ctx context.Context) (schemaRow, error) {
	for {
		var row schemaRow
		err := r.table.Get(ctx, schemaPK, schemaRK, &row)
		if err == nil {
			return row, nil
		}
		if !errors.Is(err, tablestore.ErrNotFound) {
			return row, fmt.Errorf("migrate: read version: %w", err)
		}
		row = schemaRow{Meta: tablestore.Meta{PartitionKey: schemaPK, RowKey: schemaRK}, UpdatedAt: r.s.Now()}
		if err := r.table.Insert(ctx, &row); err != nil && !errors.Is(err, tablestore.ErrExists) {
			return row, fmt.Errorf("migrate: create version row: %w", err)
		}
	}
}

// applyHeld runs the missing steps under the lease's context: losing the
// lease cancels the running step.
func (r *Runner) applyHeld(ctx context.Context, row *schemaRow) ([]int, error) {
	var applied []int
	for _, st := range r.steps {
		current := int(row.Version)
		if st.Version <= current {
			continue
		}
		r.s.Logger.Info("applying migration", "version", st.Version, "name", st.Name)
		stepErr := st.Apply(ctx, r.svc)
		if stepErr == nil && ctx.Err() != nil {
			stepErr = context.Cause(ctx)
		}
		row.UpdatedAt, row.AppliedBy = r.s.Now(), r.s.Locker.Identity()
		if stepErr != nil {
			row.LastError, row.LastErrorAt = fmt.Sprintf("step %d (%s): %v", st.Version, st.Name, stepErr), r.s.Now()
		} else {
			row.Version, row.LastError = int32(st.Version), ""
		}
		// Record on a context that survives cancellation, so a failure is
		// written down even when the step failed because the lease was lost.
		recordCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		err := r.table.Update(recordCtx, row)
		stop()
		if stepErr != nil {
			return applied, fmt.Errorf("migrate: step %d (%s) failed; the schema stays at version %d and the step will be retried on the next start: %w", st.Version, st.Name, current, stepErr)
		}
		if err != nil {
			return applied, fmt.Errorf("migrate: record version %d: %w", st.Version, err)
		}
		applied = append(applied, st.Version)
	}
	return applied, nil
}
