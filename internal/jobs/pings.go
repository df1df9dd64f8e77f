package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// This file is where a ping becomes a run. Pings follow Healthchecks.io:
// /start opens a run, a bare ping or an exit status closes it, /fail
// closes it failed, /log adds an entry of its own. A closing ping pairs
// with the run its rid names, else the latest one still running; with none
// to close it is a run that started and ended at once.

// MaxLog is how much of a ping's body a run keeps as its log excerpt: the
// first 100 kB, as Healthchecks keeps.
const MaxLog = 100_000

// Run states as run history keeps them.
const (
	StateRunning = "running"
	StateOK      = "ok"
	StateFailed  = "failed"
	StateLog     = "log"
)

// Errors of pings and of saving jobs.
var (
	ErrNoJob = errors.New("jobs: no such job")
	// ErrConflict is a write that lost to another one made meanwhile.
	ErrConflict = errors.New("jobs: changed meanwhile")
	// ErrNotAnAction is a ping URL whose last part is not one.
	ErrNotAnAction = errors.New("jobs: not a ping action")
	// ErrExitStatus is an exit status over 255.
	ErrExitStatus = errors.New("jobs: an exit status is 0 to 255")
	// ErrRunKeptChanging is a closing ping that lost every try to close
	// its run to other pings of the same run.
	ErrRunKeptChanging = errors.New("jobs: the run kept changing")
	// ErrLastRunNotSaved is a ping whose run was stored but whose job's
	// last run time was not.
	ErrLastRunNotSaved = errors.New("jobs: the run was stored, its job's last run not yet")
)

// Ping is one ping of a job.
type Ping struct {
	Event RunEvent
	Exit  int    // the exit status; -1 when the ping gives none
	RunID string // the ping's rid; "" when it gives none
	At    time.Time
	Body  []byte // the POST body, cut to MaxLog when recorded
}

// ParseAction reads the last part of a ping URL: "" (success), start,
// fail, log or an exit status 0 to 255 (non-zero is a failure).
func ParseAction(action string) (ev RunEvent, exit int, err error) {
	switch action {
	case "":
		return EventSuccess, 0, nil
	case "start":
		return EventStart, -1, nil
	case "fail":
		return EventFailure, -1, nil
	case "log":
		return EventLog, -1, nil
	}
	n, err := strconv.Atoi(action)
	switch {
	case err != nil || n < 0:
		return 0, 0, fmt.Errorf("%w: %q", ErrNotAnAction, action)
	case n > 255:
		return 0, 0, fmt.Errorf("%w: %d", ErrExitStatus, n)
	case n != 0:
		return EventFailure, n, nil
	}
	return EventSuccess, 0, nil
}

// Entry is one entry of a job's run history: a run, or a log ping.
type Entry struct {
	RunID      string
	Start, End time.Time // End is zero while the run runs
	State      string
	ExitStatus int // -1 when not given
	Log        []byte
	// Key and Version name the stored entry Running found, for Finish:
	// the stored Start may be coarser than the ping's, so the key is not
	// derived again.
	Key, Version string
}

// RunStore keeps run history.
type RunStore interface {
	// Add stores a new entry; one that exists with the same start and run
	// id is kept as it is (a ping retried after a lost answer).
	Add(ctx context.Context, jobID string, e Entry) error
	// Running finds the run a closing ping closes: the one with runID
	// when given, else the latest still running, started within a day
	// before at. None is found=false.
	Running(ctx context.Context, jobID, runID string, at time.Time) (e Entry, found bool, err error)
	// Finish replaces the run Running found (e.Key) on condition it is
	// still at e.Version, else ErrConflict.
	Finish(ctx context.Context, jobID string, e Entry) error
}

// LastRuns records when a job's runs last arrived, and its /start pings,
// on the job as it was read (storage.Jobs: one write when the row has not
// changed since).
type LastRuns interface {
	TouchRead(ctx context.Context, job Job, at time.Time, started bool) error
}

// ExtraRuns counts the runs a job was sent past MaxRunsPerSlot
// (storage.Jobs).
type ExtraRuns interface {
	AddExtraRuns(ctx context.Context, id string, n int) error
}

// Recorder turns pings into run history.
type Recorder struct {
	Runs     RunStore
	Jobs     LastRuns
	NewRunID func() string
	// Bound, if set, keeps at most MaxRunsPerSlot runs per slot; Extra
	// counts the rest on the job.
	Bound *SlotBound
	Extra ExtraRuns
}

// ErrTooManyRuns is a run past MaxRunsPerSlot in one slot's window:
// counted on the job, not stored.
var ErrTooManyRuns = fmt.Errorf("jobs: more than %d runs in one slot's window: counted, not stored", MaxRunsPerSlot)

// admit says whether a run of job at may be stored, and counts it on the
// job when not.
func (r Recorder) admit(ctx context.Context, job Job, at time.Time) error {
	if r.Bound == nil {
		return nil
	}
	ok, tell := r.Bound.Allow(job, at, time.Now())
	if ok {
		return nil
	}
	if tell > 0 && r.Extra != nil {
		if err := r.Extra.AddExtraRuns(ctx, job.ID, tell); err != nil {
			return err
		}
	}
	return ErrTooManyRuns
}

// Record applies one ping to a job's runs and, unless it is a log entry,
// to the job's last run time. The status is the scanner's to change, on
// its next pass: it alone sees a change of status, and alerts on it. A
// paused job still records its runs: a ping is never lost.
func (r Recorder) Record(ctx context.Context, job Job, p Ping) error {
	if len(p.Body) > MaxLog {
		p.Body = p.Body[:MaxLog]
	}
	if err := r.admit(ctx, job, p.At); err != nil {
		return err
	}
	if p.Event == EventStart {
		// The job says a run may be open before the run is stored: a
		// closing ping that reads the job after this looks for it.
		if err := r.Jobs.TouchRead(ctx, job, p.At, true); err != nil {
			return err
		}
		return r.apply(ctx, job, p)
	}
	if err := r.apply(ctx, job, p); err != nil {
		return err
	}
	if p.Event == EventLog {
		return nil
	}
	if err := r.Jobs.TouchRead(ctx, job, p.At, false); err != nil {
		return fmt.Errorf("%w: %w", ErrLastRunNotSaved, err)
	}
	return nil
}

// mayBeOpen says whether a closing ping of job may close a run still
// open: it names one, or a /start came within the day a run is looked
// for. Else it is a run of its own, with no query for an open one.
func mayBeOpen(job Job, p Ping) bool {
	return p.RunID != "" || !job.LastStartAt.IsZero() && p.At.Sub(job.LastStartAt) < 24*time.Hour
}

func (r Recorder) apply(ctx context.Context, job Job, p Ping) error {
	jobID := job.ID
	rid := p.RunID
	if rid == "" {
		rid = r.NewRunID()
	}
	switch p.Event {
	case EventStart:
		return r.Runs.Add(ctx, jobID, Entry{RunID: rid, Start: p.At, State: StateRunning, ExitStatus: -1, Log: p.Body})
	case EventLog:
		return r.Runs.Add(ctx, jobID, Entry{RunID: rid, Start: p.At, End: p.At, State: StateLog, ExitStatus: -1, Log: p.Body})
	}
	state := StateOK
	if p.Event == EventFailure {
		state = StateFailed
	}
	if !mayBeOpen(job, p) {
		return r.Runs.Add(ctx, jobID, Entry{RunID: rid, Start: p.At, End: p.At, State: state, ExitStatus: p.Exit, Log: p.Body})
	}
	for range 3 {
		open, found, err := r.Runs.Running(ctx, jobID, p.RunID, p.At)
		if err != nil {
			return err
		}
		if !found {
			return r.Runs.Add(ctx, jobID, Entry{RunID: rid, Start: p.At, End: p.At, State: state, ExitStatus: p.Exit, Log: p.Body})
		}
		open.End, open.State, open.ExitStatus = p.At, state, p.Exit
		if len(p.Body) > 0 {
			open.Log = append(open.Log, p.Body...)
			open.Log = open.Log[:min(len(open.Log), MaxLog)]
		}
		err = r.Runs.Finish(ctx, jobID, open)
		if errors.Is(err, ErrConflict) {
			continue
		}
		return err
	}
	return fmt.Errorf("%w: %s", ErrRunKeptChanging, jobID)
}

// Auto-provisioned jobs, made by a first ping of an unknown slug with
// ?create=1, start with Healthchecks' own defaults: a run a day, an hour
// of grace. An operator sets the real schedule later.
const (
	AutoSchedule = "every 24h"
	AutoGrace    = time.Hour
)

// Provisioned is the job a first ping of slug makes.
func Provisioned(slug string, now time.Time) Job {
	j := Fresh(now)
	j.Slug, j.Name, j.Schedule, j.TimeZone, j.Grace = slug, slug, AutoSchedule, "UTC", AutoGrace
	return j
}
