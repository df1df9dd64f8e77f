package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/otlp"
)

// This file is where a timer function's own invocations, as its host
// exports them over OpenTelemetry, become runs of the job that names the
// function: no ping needed. A run is keyed by its start and the
// invocation's id, so the same invocation stored twice (an export sent
// again, or to a second instance) is one run.

// Invocation is one run of a function as its host told it.
type Invocation struct {
	Function string
	ID       string // the host's invocation id
	Start    time.Time
	End      time.Time
	Failed   bool
	Error    string // for a failed run: the error's text, cut; kept as the run's log
}

// MaxInvocationRuns bounds the runs one export may add: a timer runs at
// most once a second, and an export covers seconds, so more is not a
// timer's and is not kept.
const MaxInvocationRuns = 50

// JobLister lists every job.
type JobLister interface {
	List(ctx context.Context) ([]Job, error)
}

// Invocations takes invocations as runs of the jobs that name their app
// and function. Pings keep working beside it.
type Invocations struct {
	Jobs JobLister
	Runs Recorder
	// Fresh is how long a list of jobs is used before it is read again
	// (default 2 s): a job made or linked on another instance a moment
	// ago takes runs from the next export after that.
	Fresh time.Duration
	// Writes, if set, counts the jobs written on this instance
	// (storage.Jobs.Writes): a job made here takes runs from the very
	// next export.
	Writes func() int64
	Now    func() time.Time
	// Budget, if set, is charged two rows a run (the run, the job's last
	// run time) before an export's runs are kept: a key holder who floods
	// a job spends its own app's budget (ingest.RowBudget).
	Budget interface {
		Charge(appID string, rows int, now time.Time) error
	}

	mu      sync.Mutex
	byFunc  map[appFunction][]Job
	listed  time.Time
	written int64 // Writes when the list was read
}

type appFunction struct{ app, function string }

// Take keeps invs, all of appID, as runs of the jobs that name their
// functions, and says how many runs it kept. Invocations of functions no
// job names cost nothing. Past MaxInvocationRuns the rest are left out,
// and counted in skipped.
func (v *Invocations) Take(ctx context.Context, appID string, invs []Invocation) (kept, skipped int, err error) {
	if len(invs) == 0 {
		return 0, 0, nil
	}
	byFunc, err := v.jobsByFunction(ctx)
	if err != nil {
		return 0, 0, err
	}
	var errs []error
	for _, inv := range invs {
		for _, j := range byFunc[appFunction{appID, inv.Function}] {
			if kept >= MaxInvocationRuns {
				skipped++
				continue
			}
			if err := v.Runs.RecordInvocation(ctx, j, inv); err != nil {
				if errors.Is(err, ErrTooManyRuns) {
					skipped++ // counted on the job, and not sent again
					continue
				}
				errs = append(errs, err)
				continue
			}
			kept++
		}
	}
	return kept, skipped, errors.Join(errs...)
}

// TakeExported keeps the invocations a host exported (otlp.Invocation:
// counted, deduplicated) of functions a job names as those jobs' runs,
// after charging the app's budget for them (its error, as it is, when it
// refuses), and says how many it kept. Invocations of other functions
// cost nothing.
func (v *Invocations) TakeExported(ctx context.Context, appID string, invs []otlp.Invocation) (int, error) {
	watched, err := v.Watched(ctx, appID)
	if err != nil {
		return 0, err
	}
	var runs []Invocation
	for _, inv := range invs {
		if watched(inv.Function) {
			runs = append(runs, Invocation{Function: inv.Function, ID: inv.ID, Start: inv.Start, End: inv.At, Failed: inv.Failed, Error: inv.Sample})
		}
	}
	if len(runs) > 0 && v.Budget != nil {
		if err := v.Budget.Charge(appID, 2*min(len(runs), MaxInvocationRuns), time.Now()); err != nil {
			return 0, err
		}
	}
	kept, _, err := v.Take(ctx, appID, runs)
	return kept, err
}

// Watched says which of appID's functions a job names: an export's
// invocations of the others need not be made into runs at all.
func (v *Invocations) Watched(ctx context.Context, appID string) (func(function string) bool, error) {
	byFunc, err := v.jobsByFunction(ctx)
	if err != nil {
		return nil, err
	}
	return func(function string) bool { return len(byFunc[appFunction{appID, function}]) > 0 }, nil
}

func (v *Invocations) jobsByFunction(ctx context.Context) (map[appFunction][]Job, error) {
	fresh := v.Fresh
	if fresh <= 0 {
		fresh = 2 * time.Second
	}
	now := v.Now()
	var written int64
	if v.Writes != nil {
		written = v.Writes()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byFunc != nil && now.Sub(v.listed) < fresh && !now.Before(v.listed) && written == v.written {
		return v.byFunc, nil
	}
	js, err := v.Jobs.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: list jobs for invocations: %w", err)
	}
	byFunc := map[appFunction][]Job{}
	for _, j := range js {
		if j.AppID != "" && j.Function != "" {
			k := appFunction{j.AppID, j.Function}
			byFunc[k] = append(byFunc[k], j)
		}
	}
	v.byFunc, v.listed, v.written = byFunc, now, written
	return byFunc, nil
}

// RecordInvocation keeps one invocation as a run of job, and the job's
// last run time. The run's id is the invocation's, so storing it again
// changes nothing. The status is the scanner's to change, as for pings.
func (r Recorder) RecordInvocation(ctx context.Context, job Job, inv Invocation) error {
	start := inv.Start
	if start.IsZero() || start.After(inv.End) {
		start = inv.End
	}
	if err := r.admit(ctx, job, start); err != nil {
		return err
	}
	e := Entry{RunID: "inv." + inv.ID, Start: start, End: inv.End, State: StateOK, ExitStatus: -1}
	if inv.Failed {
		e.State = StateFailed
		if inv.Error != "" {
			e.Log = []byte(cutText(inv.Error, MaxLog))
		}
	}
	if err := r.Runs.Add(ctx, job.ID, e); err != nil {
		return err
	}
	if err := r.Jobs.TouchRead(ctx, job, inv.End, false); err != nil {
		return fmt.Errorf("%w: %w", ErrLastRunNotSaved, err)
	}
	return nil
}

// cutText shortens s to at most n bytes without splitting a character.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}
