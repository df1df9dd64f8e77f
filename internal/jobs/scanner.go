package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

// ScannerStore is what the scanner reads and writes.
type ScannerStore interface {
	List(ctx context.Context) ([]Job, error)
	Between(ctx context.Context, jobID string, from, to time.Time, limit int) ([]Run, bool, error)
	SetStatus(ctx context.Context, f lease.Fence, id string, st Status) error
	Windows(ctx context.Context) ([]Window, error)
	// PutTally stores the jobs' state for metrics.
	PutTally(ctx context.Context, t Tally) error
	// AddFlip records a change of a job's status; recording the same
	// change twice keeps one.
	AddFlip(ctx context.Context, jobID string, fl Flip) error
}

// Flip is one change of a job's status, and why.
type Flip struct {
	From, To Status
	At       time.Time
	Why      string
}

// Notifier is told when a job's status changes, to mail its recipients.
type Notifier func(ctx context.Context, j Job, from, to Status, at time.Time) error

// Scanner recomputes every job's status from its schedule and runs. Run it
// under a lease.
type Scanner struct {
	s        ScannerSettings
	store    ScannerStore
	clock    clock.Clock
	log      *slog.Logger
	lookback time.Duration
}

// ScannerSettings are what a Scanner is told besides its store.
type ScannerSettings struct {
	Clock  clock.Clock // default clock.Real
	Logger *slog.Logger
	// Notify, when set, is told about each change of status.
	Notify Notifier
	// TimerLast, when set, says when the Functions host's timer status
	// says job j's timer last fired (zero: unknown), a second witness for
	// slots with no reported run.
	TimerLast func(ctx context.Context, j Job, now time.Time) time.Time
	// CatchUp, when set, carries out misfire policies: it claims the slot
	// (once across instances), checks nothing holds the job's function off,
	// and runs it. It reports whether it ran.
	CatchUp func(ctx context.Context, j Job, slot, now time.Time) (bool, error)
}

// NewScanner judges each job over the last 7 days.
func NewScanner(store ScannerStore, s ScannerSettings) *Scanner {
	c, log := s.Clock, s.Logger
	if c == nil {
		c = clock.Real{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scanner{s: s, store: store, clock: c, log: log, lookback: 7 * 24 * time.Hour}
}

// Pass scans every job once.
func (s *Scanner) Pass(ctx context.Context, f lease.Fence) error {
	now := s.clock.Now()
	js, err := s.store.List(ctx)
	if err != nil {
		return err
	}
	ws, err := s.store.Windows(ctx)
	if err != nil {
		return err
	}
	var errs []error
	judged := make([]Job, 0, len(js))
	for _, j := range js {
		st, why, err := s.statusOf(ctx, j, ws, now)
		if err != nil {
			errs = append(errs, err)
			judged = append(judged, j)
			continue
		}
		prev := j
		j.Status = st
		judged = append(judged, j)
		if st != prev.Status {
			j = prev
			if err := s.store.SetStatus(ctx, f, j.ID, st); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := s.store.AddFlip(ctx, j.ID, Flip{From: j.Status, To: st, At: now, Why: why}); err != nil {
				errs = append(errs, err) // the change stands; only its log line is missing
			}
			s.log.Info("job status changed", "job", j.Name, "from", j.Status.String(), "to", st.String())
			if s.s.Notify != nil && !Silenced(j, ws, now) {
				if err := s.s.Notify(ctx, j, j.Status, st, now); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := s.store.PutTally(ctx, TallyOf(judged, now)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Scanner) statusOf(ctx context.Context, j Job, ws []Window, now time.Time) (Status, string, error) {
	if j.Paused {
		return Paused, "paused by an operator", nil
	}
	from := now.Add(-s.lookback)
	first, last := j.RunRange(from, now)
	runs, more, err := s.store.Between(ctx, j.ID, first, last, j.RunsToRead(from, now))
	if err != nil {
		return j.Status, "", err
	}
	from = ReadFrom(from, runs, more)
	results, err := Assess(j, runs, ws, from, now)
	if err != nil {
		return j.Status, "", err
	}
	if s.s.TimerLast != nil {
		Witness(results, s.s.TimerLast(ctx, j, now))
	}
	if s.s.CatchUp != nil {
		started := 0
		for _, slot := range CatchUp(j, results) {
			if started == MaxCatchUp {
				break // the next pass goes on
			}
			ran, err := s.s.CatchUp(ctx, j, slot, now)
			if err != nil {
				s.log.Warn("catch-up run failed", "job", j.Name, "slot", slot, "error", err)
				break
			}
			if ran {
				started++
				s.log.Info("catch-up run started", "job", j.Name, "slot", slot)
			}
		}
	}
	st := StatusOf(j, results, runs, len(runs) > 0 || !j.LastRunAt.IsZero(), now)
	return st, Why(j, results, runs, st), nil
}
