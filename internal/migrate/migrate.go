// Package migrate applies ordered, versioned schema steps to Table Storage.
//
// The applied version lives in one row of the Schema table. An instance
// that finds work to do claims that row with a conditional write, applies
// the missing steps in order, recording the version after each, and
// releases the claim. Others wait while the claim is live, so two instances
// starting together apply each step once.
//
// What it guarantees: a step is recorded as applied only after it returned
// without error, and a failed step leaves the version where it was, so the
// next start retries it. What it does not: if a claimant dies mid-step the
// step may run again after the claim goes stale, so steps must be safe to
// repeat (create-if-missing, transform-if-untransformed). A claim counts as
// stale when its row has not changed for ClaimTTL as measured by the waiting
// instance's own monotonic clock, never by comparing clocks across machines.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/tablestore"
)

// Step is one change to the schema or data. Apply must be safe to repeat.
type Step struct {
	Version int
	Name    string
	Apply   func(ctx context.Context, svc *tablestore.Service) error
}

// Settings tune a Runner. Zero values take the documented defaults.
type Settings struct {
	// Holder names this instance in the claim, for people reading the row.
	Holder string
	// ClaimTTL is how long a claim may go without a heartbeat before others
	// take it over. Default 2 minutes.
	ClaimTTL time.Duration
	// Poll is how often a waiting instance rereads the row. Default 1 second.
	Poll time.Duration
	// Now is the wall clock, used only for the times recorded in the row.
	Now func() time.Time
	// Since measures elapsed time on the monotonic clock. Default time.Since.
	Since func(time.Time) time.Duration
	// Logger reports progress. Default: discard.
	Logger *slog.Logger
}

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
	if s.Holder == "" {
		s.Holder = "unknown"
	}
	if s.ClaimTTL <= 0 {
		s.ClaimTTL = 2 * time.Minute
	}
	if s.Poll <= 0 {
		s.Poll = time.Second
	}
	if s.Poll >= s.ClaimTTL {
		return nil, fmt.Errorf("migrate: Poll (%s) must be shorter than ClaimTTL (%s)", s.Poll, s.ClaimTTL)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Since == nil {
		s.Since = time.Since
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
	ClaimedBy   string
	ClaimedAt   time.Time
	LastError   string
	LastErrorAt time.Time
	UpdatedAt   time.Time
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
	var seenETag tablestore.ETag
	var seenAt time.Time
	for {
		row, err := r.readOrCreate(ctx)
		if err != nil {
			return nil, err
		}
		if int(row.Version) > r.Latest() {
			return nil, fmt.Errorf("migrate: storage is at version %d but this build knows only %d; run a newer Fusebox", row.Version, r.Latest())
		}
		if int(row.Version) == r.Latest() {
			return nil, nil
		}
		if row.ETag != seenETag {
			seenETag, seenAt = row.ETag, time.Now()
		}
		if row.ClaimedBy != "" && r.s.Since(seenAt) < r.s.ClaimTTL {
			r.s.Logger.Info("waiting for another instance to finish migrating", "holder", row.ClaimedBy, "version", row.Version)
			if err := wait(ctx, r.s.Poll); err != nil {
				return nil, fmt.Errorf("migrate: waiting for %s: %w", row.ClaimedBy, err)
			}
			continue
		}
		if row.ClaimedBy != "" {
			r.s.Logger.Warn("taking over a stale migration claim", "holder", row.ClaimedBy, "version", row.Version)
		}
		row.ClaimedBy, row.ClaimedAt, row.UpdatedAt = r.s.Holder, r.s.Now(), r.s.Now()
		if err := r.table.Update(ctx, &row); err != nil {
			if errors.Is(err, tablestore.ErrConflict) || errors.Is(err, tablestore.ErrNotFound) {
				continue // someone else moved first; look again
			}
			return nil, fmt.Errorf("migrate: claim: %w", err)
		}
		return r.applyClaimed(ctx, &row)
	}
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

// applyClaimed runs the missing steps while a heartbeat keeps the claim
// fresh. Losing the claim cancels the running step.
func (r *Runner) applyClaimed(ctx context.Context, row *schemaRow) ([]int, error) {
	var mu sync.Mutex // guards row: the heartbeat and the steps both write it
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(r.s.ClaimTTL / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				mu.Lock()
				row.UpdatedAt = r.s.Now()
				err := r.table.Update(ctx, row)
				mu.Unlock()
				if errors.Is(err, tablestore.ErrConflict) || errors.Is(err, tablestore.ErrNotFound) {
					cancel(errors.New("migrate: another instance took over the migration claim"))
					return
				}
			}
		}
	}()

	var applied []int
	for _, st := range r.steps {
		mu.Lock()
		current := int(row.Version)
		mu.Unlock()
		if st.Version <= current {
			continue
		}
		r.s.Logger.Info("applying migration", "version", st.Version, "name", st.Name)
		stepErr := st.Apply(ctx, r.svc)
		if stepErr == nil && context.Cause(ctx) != nil && ctx.Err() != nil {
			stepErr = context.Cause(ctx)
		}
		mu.Lock()
		row.UpdatedAt = r.s.Now()
		if stepErr != nil {
			row.ClaimedBy, row.LastError, row.LastErrorAt = "", fmt.Sprintf("step %d (%s): %v", st.Version, st.Name, stepErr), r.s.Now()
		} else {
			row.Version, row.LastError = int32(st.Version), ""
		}
		if st.Version == r.Latest() {
			row.ClaimedBy = ""
		}
		// Record on a context that survives cancellation, so a failure is
		// written down even when the step failed because ctx ended.
		recordCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		err := r.table.Update(recordCtx, row)
		stop()
		mu.Unlock()
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

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
