package hostinsight

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
)

// Sampler keeps each app's learned concurrency, so circuit pages can draw
// its day.
type Sampler struct {
	Apps interface {
		List(context.Context) ([]circuit.App, error)
	}
	Hosts interface {
		Snapshot(ctx context.Context, app circuit.App, now time.Time) (Snapshot, bool)
	}
	Samples interface {
		PutConcurrency(ctx context.Context, appID, function string, at time.Time, n int) error
	}
	Now func() time.Time
}

// Pass records every app's learned concurrency once. Apps are read one
// after another: each within its snapshot's time-out, off every other
// loop's path.
func (s *Sampler) Pass(ctx context.Context, _ lease.Fence) error {
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	now := s.Now()
	var errs []error
	for _, app := range apps {
		snap, ok := s.Hosts.Snapshot(ctx, app, now)
		if !ok || snap.Concurrency == nil {
			continue
		}
		for fn, n := range snap.Concurrency.Functions {
			if err := s.Samples.PutConcurrency(ctx, app.ID, fn, now, n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// ConcurrencySample is a function's learned concurrency at one time.
type ConcurrencySample struct {
	At          time.Time
	Concurrency int
}

// WaitingSample is the events waiting behind a function's checkpoints at
// one time.
type WaitingSample struct {
	At      time.Time
	Waiting int64
}
