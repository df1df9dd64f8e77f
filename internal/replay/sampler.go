package replay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fanout"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
)

// Every is how often the sampler reads checkpoints: the replay point is
// the last sample before the first failure, so it is placed at most this
// much (and Slack) earlier than it could be.
const Every = 10 * time.Second

// KeepAlive is how often a sample is written though nothing moved: a
// quiet partition's position must still be found within Lookback.
const KeepAlive = 5 * time.Minute

// Lookback bounds the history read for one point: a sample is written at
// least every KeepAlive.
const Lookback = KeepAlive + time.Minute

// Sampler keeps, every pass, where each Event Hubs function's partitions
// stand, and places the replay point of each circuit that opened.
type Sampler struct {
	Circuits hostinsight.Lister
	Hosts    interface {
		Checkpoints(ctx context.Context, app circuit.App) ([]hostinsight.Checkpoint, error)
	}
	History interface {
		Put(ctx context.Context, appID, function string, s Sample) error
	}
	// Place stores an opened circuit's point (Service.Place).
	Place func(ctx context.Context, ci circuit.Circuit, app circuit.App) error
	// Settle records the replays that will not run (Service.Settle).
	Settle func(ctx context.Context, appID string, circuits []circuit.Circuit) error
	Now    func() time.Time

	mu   sync.Mutex
	last map[string]Sample // app/function: the last sample written
}

const samplerParallel = 8

// Pass samples once. Apps are read side by side, so a slow account holds
// up only its own functions.
func (s *Sampler) Pass(ctx context.Context, _ lease.Fence) error {
	byApp, byID, err := hostinsight.EventHubCircuits(ctx, s.Circuits, func(circuit.Circuit, circuit.App) bool { return true })
	if err != nil {
		return err
	}
	return fanout.Each(byApp, samplerParallel, func(appID string, circuits []circuit.Circuit) error {
		app := byID[appID]
		cps, err := s.Hosts.Checkpoints(ctx, app)
		if err != nil {
			return err
		}
		now := s.Now()
		var errs []error
		for _, ci := range circuits {
			if err := s.keep(ctx, ci, cps, now); err != nil {
				errs = append(errs, err)
			}
			if ci.State.TriggerOff() && !ci.Pending() && s.Place != nil {
				if err := s.Place(ctx, ci, app); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if s.Settle != nil {
			if err := s.Settle(ctx, appID, circuits); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// keep writes ci's sample when it differs from the last one written, or
// KeepAlive passed.
func (s *Sampler) keep(ctx context.Context, ci circuit.Circuit, cps []hostinsight.Checkpoint, now time.Time) error {
	smp := Sample{At: now}
	for _, c := range cps {
		if ci.Consumes().Matches(c.Namespace, c.Hub, c.ConsumerGroup) && len(smp.Marks) < MaxPartitions {
			smp.Marks = append(smp.Marks, MarkOf(c))
		}
	}
	if len(smp.Marks) == 0 {
		return nil
	}
	s.mu.Lock()
	last, ok := s.last[ci.ID()]
	s.mu.Unlock()
	if ok && smp.Same(last) && now.Sub(last.At) < KeepAlive {
		return nil
	}
	if err := s.History.Put(ctx, ci.AppID, ci.Function, smp); err != nil {
		return err
	}
	s.mu.Lock()
	if s.last == nil {
		s.last = map[string]Sample{}
	}
	s.last[ci.ID()] = smp
	s.mu.Unlock()
	return nil
}
