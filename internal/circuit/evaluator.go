package circuit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

// FailureRow is one stored failure count: one writer's failures of one
// function in one second.
type FailureRow struct {
	ID       string // stable identity of the stored row
	Circuit  string // app/function
	Second   time.Time
	Count    int
	Modified time.Time // when storage last changed the row (its clock)
}

// Rejection is a stored row that could not be read as a failure count.
type Rejection struct {
	ID     string
	Reason string
}

// Status is what the evaluator reports about itself for the dashboard.
type Status struct {
	Leader       string
	LastTickAt   time.Time
	TickDuration time.Duration
	Rejected     int64  // unreadable failure rows seen by this leader
	LastRejected string // the last one: its key and what is wrong
	RejectedAt   time.Time
}

// Store is what the evaluator needs of storage.
type Store interface {
	ListApps(ctx context.Context) ([]App, error)
	ListCircuits(ctx context.Context) ([]Circuit, error)
	// Transition records a state change and its flip on condition that
	// the circuit is still at c.Version and the fence admits the write.
	Transition(ctx context.Context, f lease.Fence, c Circuit, fl Flip) error
	MarkApplied(ctx context.Context, f lease.Fence, appID, function string, episode int64) error
	SetDrift(ctx context.Context, f lease.Fence, appID, function string, episode int64, drift string, now time.Time) error
	// Window returns the failure rows for seconds in [from, to], and the
	// unreadable rows not reported before. It may read only what changed
	// since its previous call.
	Window(ctx context.Context, from, to time.Time) ([]FailureRow, []Rejection, error)
	PutStatus(ctx context.Context, s Status) error
}

// Switch turns functions' triggers off and on for one kind of app.
type Switch interface {
	// Disabled returns the functions the app's settings switch off.
	Disabled(ctx context.Context, app App) (map[string]bool, error)
	SetDisabled(ctx context.Context, app App, function string, disabled bool) error
}

// EvaluatorSettings tune the evaluator. Zero values take the defaults.
type EvaluatorSettings struct {
	Interval   time.Duration // between ticks; default 1s
	DriftEvery time.Duration // how often actual trigger settings are read back; default 30s
	Clock      clock.Clock
	Logger     *slog.Logger
	Identity   string // reported as the leader in Status
}

// Evaluator counts failures over each circuit's window, trips circuits,
// and makes triggers follow circuits. Run it under a lease: it assumes it
// is the only one acting, and fences every write it makes.
type Evaluator struct {
	store Store
	sw    Switch
	s     EvaluatorSettings

	rows       map[string]FailureRow // by ID, for seconds within the longest window
	lastDrift  time.Time
	lastStatus time.Time
	reported   int64 // Rejected as last written
	status     Status
}

// NewEvaluator fills defaults.
func NewEvaluator(store Store, sw Switch, s EvaluatorSettings) *Evaluator {
	if s.Interval <= 0 {
		s.Interval = time.Second
	}
	if s.DriftEvery <= 0 {
		s.DriftEvery = 30 * time.Second
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{store: store, sw: sw, s: s}
}

// Run ticks until ctx ends (the lease is lost or Fusebox stops). Each
// tenure starts from an empty memory and a full read.
func (e *Evaluator) Run(ctx context.Context, f lease.Fence) error {
	e.rows, e.lastDrift, e.lastStatus, e.reported = map[string]FailureRow{}, time.Time{}, time.Time{}, 0
	e.status = Status{Leader: e.s.Identity}
	for {
		start := e.s.Clock.Now()
		if err := e.Tick(ctx, f); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, lease.ErrFenced) {
				return err // someone newer is in charge
			}
			e.s.Logger.Warn("evaluator tick failed", "error", err)
		}
		// Tick at a fixed rate: a slow tick shortens the wait, it does not
		// push every later tick back.
		wait := e.s.Interval - e.s.Clock.Now().Sub(start)
		if err := e.s.Clock.Sleep(ctx, max(wait, e.s.Interval/10)); err != nil {
			return nil
		}
	}
}

// Tick runs one pass: read new failures, evaluate every circuit, apply
// triggers that lag their circuit, and now and then look for drift.
func (e *Evaluator) Tick(ctx context.Context, f lease.Fence) error {
	now := e.s.Clock.Now()
	circuits, err := e.store.ListCircuits(ctx)
	if err != nil {
		return err
	}
	apps, err := e.store.ListApps(ctx)
	if err != nil {
		return err
	}
	appByID := make(map[string]App, len(apps))
	for _, a := range apps {
		appByID[a.ID] = a
	}
	longest := time.Duration(0)
	for _, c := range circuits {
		longest = max(longest, c.Window)
	}
	if err := e.readFailures(ctx, now, longest); err != nil {
		return err
	}
	counts := CountWindows(e.rows, circuits, now)

	var errs []error
	touched := map[string]bool{} // changed or applied this tick: their stored row is newer than circuits
	for _, c := range circuits {
		next, fl := Evaluate(c, counts[c.ID()], now)
		if fl != nil {
			if err := e.store.Transition(ctx, f, next, *fl); err != nil {
				if errors.Is(err, lease.ErrFenced) {
					return err
				}
				errs = append(errs, err) // reread next tick
				continue
			}
			e.s.Logger.Info("circuit changed", "circuit", c.ID(), "from", fl.From.String(), "to", fl.To.String(), "episode", fl.Episode, "reason", fl.Reason)
			touched[c.ID()] = true
		}
		if next.Pending() {
			touched[c.ID()] = true
			if err := e.apply(ctx, f, appByID, next); err != nil {
				if errors.Is(err, lease.ErrFenced) {
					return err
				}
				errs = append(errs, err)
			}
		}
	}
	if now.Sub(e.lastDrift) >= e.s.DriftEvery {
		e.lastDrift = now
		var settled []Circuit
		for _, c := range circuits {
			if !touched[c.ID()] {
				settled = append(settled, c)
			}
		}
		if err := e.checkDrift(ctx, f, appByID, settled, now); err != nil {
			errs = append(errs, err)
		}
	}
	e.status.LastTickAt, e.status.TickDuration = now, e.s.Clock.Now().Sub(now)
	// Report every ten seconds, and at once when something is wrong.
	if now.Sub(e.lastStatus) >= 10*time.Second || len(errs) > 0 || e.status.Rejected != e.reported {
		if err := e.store.PutStatus(ctx, e.status); err != nil {
			errs = append(errs, err)
		} else {
			e.lastStatus, e.reported = now, e.status.Rejected
		}
	}
	return errors.Join(errs...)
}

func (e *Evaluator) readFailures(ctx context.Context, now time.Time, longest time.Duration) error {
	rows, rejected, err := e.store.Window(ctx, now.Add(-longest).Truncate(time.Second), now)
	if err != nil {
		return err
	}
	e.rows = make(map[string]FailureRow, len(rows))
	for _, r := range rows {
		e.rows[r.ID] = r
	}
	for _, r := range rejected {
		e.status.Rejected++
		e.status.LastRejected, e.status.RejectedAt = r.ID+": "+r.Reason, now
		e.s.Logger.Warn("unreadable failure row skipped", "row", r.ID, "reason", r.Reason)
	}
	return nil
}

// CountWindows adds up, for each circuit, the failures in its window
// ending at now and those since it last changed.
func CountWindows(rows map[string]FailureRow, circuits []Circuit, now time.Time) map[string]Counts {
	byID := make(map[string]Circuit, len(circuits))
	for _, c := range circuits {
		byID[c.ID()] = c
	}
	counts := make(map[string]Counts, len(circuits))
	for _, r := range rows {
		c, ok := byID[r.Circuit]
		if !ok || r.Second.After(now) {
			continue
		}
		// A second [s, s+1) is in the window (now-W, now] when s > now-W-1s,
		// rounded so that whole seconds fall in or out.
		if !r.Second.After(now.Add(-c.Window)) {
			continue
		}
		n := counts[r.Circuit]
		n.Window += r.Count
		if r.Second.After(c.ChangedAt) {
			n.SinceChange += r.Count
		}
		counts[r.Circuit] = n
	}
	return counts
}

func (e *Evaluator) apply(ctx context.Context, f lease.Fence, apps map[string]App, c Circuit) error {
	app, ok := apps[c.AppID]
	if !ok {
		return fmt.Errorf("circuit %s: app %s is not registered", c.ID(), c.AppID)
	}
	off := c.State.TriggerOff()
	if err := e.sw.SetDisabled(ctx, app, c.Function, off); err != nil {
		return fmt.Errorf("circuit %s: switch the trigger %s: %w", c.ID(), onOff(!off), err)
	}
	if err := e.store.MarkApplied(ctx, f, c.AppID, c.Function, c.Episode); err != nil {
		return fmt.Errorf("circuit %s: record the switch: %w", c.ID(), err)
	}
	e.s.Logger.Info("trigger switched", "circuit", c.ID(), "trigger", onOff(!off), "episode", c.Episode)
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// checkDrift reads each app's actual settings and records circuits whose
// trigger was moved by someone else after Fusebox applied it.
func (e *Evaluator) checkDrift(ctx context.Context, f lease.Fence, apps map[string]App, circuits []Circuit, now time.Time) error {
	byApp := map[string][]Circuit{}
	for _, c := range circuits {
		byApp[c.AppID] = append(byApp[c.AppID], c)
	}
	var errs []error
	for appID, cs := range byApp {
		app, ok := apps[appID]
		if !ok {
			continue
		}
		disabled, err := e.sw.Disabled(ctx, app)
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s: read trigger settings: %w", appID, err))
			continue
		}
		for _, c := range cs {
			if c.Pending() {
				continue // not applied yet: not drift
			}
			drift := DriftOf(c, disabled[c.Function])
			if drift == c.Drift {
				continue
			}
			if err := e.store.SetDrift(ctx, f, c.AppID, c.Function, c.Episode, drift, now); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// DriftOf describes how the actual trigger differs from what the circuit
// wants, or "" when it does not.
func DriftOf(c Circuit, actuallyDisabled bool) string {
	switch want := c.State.TriggerOff(); {
	case want == actuallyDisabled:
		return ""
	case want:
		return fmt.Sprintf("the circuit is %s but the function's trigger is on: someone switched it back on", c.State)
	default:
		return fmt.Sprintf("the circuit is %s but the function's trigger is off: someone switched it off", c.State)
	}
}
