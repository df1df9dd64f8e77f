package app

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/storage"
)

// jobScanner judges every job from its schedule and runs, with the host's
// timer status as a second witness, runs missed slots by their misfire
// policy, and tells the jobs' recipients when one goes missing.
func jobScanner(o Options, store *storage.Store, out reach) *jobs.Scanner {
	return jobs.NewScanner(storage.ScannerStore{Store: store}, jobs.ScannerSettings{
		Clock: o.Clock, Logger: o.Logger,
		Notify: alerts.JobNotifier(store.Outbox, withTeamChannels(store, o.Clock.Now)),
		TimerLast: func(ctx context.Context, j jobs.Job, now time.Time) time.Time {
			if j.AppID == "" || j.Function == "" {
				return time.Time{}
			}
			app, err := store.Apps.Get(ctx, j.AppID)
			if err != nil {
				return time.Time{}
			}
			return out.hosts.LastFired(ctx, app, j.Function, now)
		},
		CatchUp: jobs.CatchUps{
			TriggerHeld: func(ctx context.Context, appID, function string) (bool, error) {
				c, err := store.Circuits.Get(ctx, appID, function)
				if errors.Is(err, circuit.ErrNotFound) {
					return false, nil
				}
				return err == nil && c.State.TriggerOff(), err
			},
			Claim: store.Jobs.ClaimCatchUp,
			Run: func(ctx context.Context, appID, function string) error {
				app, err := store.Apps.Get(ctx, appID)
				if err != nil {
					return err
				}
				return out.router.Run(ctx, app, function)
			},
			Pings: pings(store),
			Audit: store.Audit.Append,
			Warn:  o.Logger.Warn,
		}.Do,
	})
}

// pings records pings, from the ping API and from Fusebox's own loops.
func pings(store *storage.Store) jobs.Recorder {
	return jobs.Recorder{Runs: store.Runs, Jobs: store.Jobs, NewRunID: storage.NewRunID, Bound: store.RunBound, Extra: store.Jobs}
}
