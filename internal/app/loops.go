package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/fusebox/fusebox/internal/replay"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/loop"
	"github.com/fusebox/fusebox/internal/storage"
)

// EvaluatorLoop is the name under which the evaluator's health is kept.
const EvaluatorLoop = "evaluator"

// BooksLease is the lease whose holder keeps the evaluator's books: the
// status and totals the pages and metrics show, and the drift checks.
// Trips and switch calls need no lease: every instance makes them.
const BooksLease = "evaluator"

// background is one loop: the lease it runs under ("" on every instance)
// and the job its passes are recorded as, so a loop that stops is a gap
// on the Jobs page like any other. The jobs' ids are fixed.
type background struct {
	lease string
	job   jobs.Job
	loop.Loop
}

// loops lists every background loop. Each loop's body belongs to the
// package that owns its work; this only says how often it runs, under
// which lease, and what it is recorded as.
func (a *App) loops() []background {
	ev := a.breakers.evaluator
	ls := []background{
		// Every instance evaluates (no lease), so a frozen instance delays
		// no trip; a report that may trip a circuit is checked at once
		// (CheckReported), and the tick is woken for what that check leaves to it.
		{"", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000004", Name: "Fusebox: circuit evaluator", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: EvaluatorLoop, Every: ev.Interval(), Phase: a.phase, RecordEvery: time.Minute,
				Deadline: a.cfg.EvaluatorDeadline, Begin: ev.Begin, End: ev.Wait, Early: ev.EarlyTicks(),
				Pass: func(ctx context.Context, _ lease.Fence) error { return ev.Tick(ctx, a.booksFence()) }}},
		// The verifier reads what each host reports after a switch wrote,
		// every 5 s, until it agrees.
		{"circuits/verifier", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000007", Name: "Fusebox: trigger verifier", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "trigger_verifier", Every: 5 * time.Second, RecordEvery: time.Minute, Pass: a.breakers.verifier.Pass}},
		// The watcher looks at apps' poison and parking queues.
		{"setaside/watcher", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000009", Name: "Fusebox: set-aside watcher", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "setaside_watcher", Every: a.setAsideEvery, RecordEvery: time.Minute, Pass: a.watcher.Pass}},
		// The retention watch reads, each minute, how long the events
		// waiting behind switched-off Event Hubs triggers are safe.
		{"hub/retention", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-00000000000a", Name: "Fusebox: retention watch", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "retention_watch", Every: a.retentionEvery, RecordEvery: time.Minute, Pass: a.retention.Pass}},
		// The drain keeps, each minute, how many events wait behind each
		// switched-off Event Hubs trigger, and for an hour after it is back
		// on, for its episode's catch-up.
		{"host/drain", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-00000000000b", Name: "Fusebox: waiting sampler", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "waiting_sampler", Every: a.retentionEvery, RecordEvery: time.Minute, Pass: a.drain.Pass}},
		// The replay sampler keeps where each Event Hubs function's
		// partitions stand every 10 s, and places an opened circuit's
		// replay point.
		{"host/replay", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-00000000000c", Name: "Fusebox: checkpoint history", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "checkpoint_history", Every: replay.Every, RecordEvery: time.Minute, Pass: a.breakers.replays.Pass}},
		// The sampler keeps each app's learned concurrency every 5 minutes.
		{"host/sampler", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000008", Name: "Fusebox: host sampler", Schedule: "0 */5 * * * *", Grace: 5 * time.Minute},
			loop.Loop{Name: "host_sampler", Every: 5 * time.Minute, Pass: a.sampler.Pass}},
		// The scanner looks a quarter period after the minute and the half
		// minute, so that jobs that run on the minute (Fusebox's own loops
		// among them) have reported before it looks, rather than showing
		// "late" for the instant between their slot and their report.
		{"jobs/scanner", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000006", Name: "Fusebox: job scanner", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "jobs_scanner", Every: 30 * time.Second, Phase: 15 * time.Second, Pass: a.scanner.Pass}},
		{"failures/pruner", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000001", Name: "Fusebox: failure pruner", Schedule: "0 */10 * * * *", Grace: 10 * time.Minute},
			loop.Loop{Name: "failures_pruner", Every: 10 * time.Minute, Pass: func(ctx context.Context, _ lease.Fence) error {
				n, err := a.Store.Prune(ctx, a.clock.Now())
				if n > 0 {
					a.log.Info("old failure rows removed", "count", n)
				}
				return err
			}}},
		{"failures/rollup", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000002", Name: "Fusebox: failure roll-up", Schedule: "*/30 * * * * *", Grace: time.Minute},
			loop.Loop{Name: "failures_rollup", Every: 30 * time.Second, Pass: func(ctx context.Context, _ lease.Fence) error {
				return a.Store.Rates.RollupRecent(ctx, a.Store.Failures, a.clock.Now())
			}}},
		{"sessions/sweeper", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000003", Name: "Fusebox: session sweeper", Schedule: "0 */10 * * * *", Grace: 10 * time.Minute},
			loop.Loop{Name: "session_sweeper", Every: 10 * time.Minute, Pass: func(ctx context.Context, _ lease.Fence) error {
				_, err := a.Store.Sessions.DeleteExpired(ctx, a.clock.Now())
				return err
			}}},
		// The downstreams' keeper trips a downstream whose quorum is met,
		// probes the ones that are off and settles their trials.
		{"downstreams/keeper", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-00000000000d", Name: "Fusebox: downstream keeper", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "downstream_keeper", Every: time.Second, RecordEvery: time.Minute, Pass: a.breakers.downstreams.Pass}},
		// The sender always runs (channels need no SMTP server), on every
		// instance: each message is claimed by a conditional write before
		// it is sent, so an instance frozen mid-send holds up only the
		// message it claimed.
		{"", jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000005", Name: "Fusebox: alert sender", Schedule: "0 * * * * *", Grace: 2 * time.Minute},
			loop.Loop{Name: "mail_sender", Every: time.Second, Phase: senderPhase(a.phase, ev.Interval()), RecordEvery: time.Minute, Pass: a.sender.Pass}},
	}
	for i := range ls {
		ls[i].JobID = ls[i].job.ID
	}
	return ls
}

// senderPhase starts this instance's sender passes half an evaluator
// interval after its evaluator's ticks, so that a pass comes soon after
// each trip this instance makes.
func senderPhase(evaluatorPhase, evaluatorEvery time.Duration) time.Duration {
	return (evaluatorPhase + min(evaluatorEvery, time.Second)/2) % time.Second
}

// keepBooks holds the books' lease until it is lost or the instance stops;
// the evaluator's ticks on this instance keep the books meanwhile.
func (a *App) keepBooks(ctx context.Context, f lease.Fence) error {
	a.books.Store(&f)
	defer a.books.Store(nil)
	a.breakers.evaluator.TickNow() // the new keeper's first status now, not a tick later
	<-ctx.Done()
	return nil
}

// booksFence is the books' lease while this instance holds it.
func (a *App) booksFence() lease.Fence {
	if f := a.books.Load(); f != nil {
		return *f
	}
	return lease.Fence{}
}

// everywhere runs a loop that every instance runs, with no lease: its work
// is safe side by side (conditional writes, claims), and no instance's
// pause holds it up. A pass that overruns is logged and the loop goes on.
func (a *App) everywhere(ctx context.Context, l loop.Loop) error {
	for {
		err := a.runner.Work(l)(ctx, lease.Fence{})
		if ctx.Err() != nil {
			return nil
		}
		a.log.Warn("loop restarted", "loop", l.Name, "error", err)
		if err := a.clock.Sleep(ctx, l.Every); err != nil {
			return nil
		}
	}
}

// ensureLoopJobs registers the loops as jobs, keeping any settings an
// operator changed since. It runs at start and again on each recorded
// pass until it succeeds, so an instance started before migrations still
// registers them.
func (a *App) ensureLoopJobs(ctx context.Context) error {
	if a.loopsRegistered.Load() {
		return nil
	}
	for _, l := range a.loops() {
		j := l.job
		if _, err := a.Store.Jobs.Get(ctx, j.ID); err == nil {
			continue
		} else if !errors.Is(err, storage.ErrNoJob) {
			return err
		}
		j.TimeZone, j.CreatedAt, j.Status = "UTC", a.clock.Now(), jobs.New
		if err := a.Store.Jobs.Put(ctx, j); err != nil {
			return err
		}
	}
	a.loopsRegistered.Store(true)
	return nil
}

// loopRecorder records loop passes as runs of their jobs.
type loopRecorder struct{ a *App }

func (r loopRecorder) RecordPass(ctx context.Context, jobID string, at time.Time, passErr error) error {
	if err := r.a.ensureLoopJobs(ctx); err != nil {
		return fmt.Errorf("register Fusebox's own loops as jobs: %w", err)
	}
	ev := jobs.EventSuccess
	var log []byte
	if passErr != nil {
		ev, log = jobs.EventFailure, []byte(passErr.Error())
	}
	// Fusebox's own passes are bounded by the loop's RecordEvery, not by
	// the bound on pings from outside (MaxRunsPerSlot): a loop that passes
	// every second in a slot of a minute is not a flood, and its job was
	// given no schedule here for the bound to read its slots from.
	rec := pings(r.a.Store)
	rec.Bound = nil
	return rec.Record(ctx, jobs.Job{ID: jobID}, jobs.Ping{Event: ev, Exit: -1, At: at, Body: log})
}
