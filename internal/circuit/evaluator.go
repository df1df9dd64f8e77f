package circuit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

// FailureRow is one stored failure count: one writer's failures of one
// function in one second.
type FailureRow struct {
	ID        string // stable identity of the stored row
	Circuit   string // app/function
	Second    time.Time
	Count     int
	Successes int       // successes the same writer reported for that second
	Modified  time.Time // when storage last changed the row (its clock)
	// TraceParent is the W3C traceparent of the report that wrote it, if any.
	TraceParent string
	// Source is the instance that reported the failures: the writer's
	// own id for rows written to the table, the instance a client named
	// for HTTP reports.
	Source string
}

// SourceCount is one instance's share of a circuit's window.
type SourceCount struct {
	Source              string
	Failures, Successes int
}

// BySource breaks a circuit's failures in (from, to] down by the instance
// that reported them, most failures first, at most limit of them.
func BySource(rows []FailureRow, circuitID string, from, to time.Time, limit int) []SourceCount {
	sums := map[string]*SourceCount{}
	for _, r := range rows {
		if r.Circuit != circuitID || !r.Second.After(from) || r.Second.After(to) {
			continue
		}
		s := sums[r.Source]
		if s == nil {
			s = &SourceCount{Source: r.Source}
			sums[r.Source] = s
		}
		s.Failures += r.Count
		s.Successes += r.Successes
	}
	out := make([]SourceCount, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Failures != out[j].Failures {
			return out[i].Failures > out[j].Failures
		}
		return out[i].Source < out[j].Source
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
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
	Tally        Tally // for metrics
}

// Stale reports whether the evaluator has not finished a tick for three of
// its intervals: no circuit is being counted, tripped or switched.
func (s Status) Stale(now time.Time, interval time.Duration) bool {
	return s.LastTickAt.IsZero() || now.Sub(s.LastTickAt.Add(s.TickDuration)) > 3*interval
}

// Store is what the evaluator needs of storage.
type Store interface {
	ListApps(ctx context.Context) ([]App, error)
	ListCircuits(ctx context.Context) ([]Circuit, error)
	// Transition records a state change and its flip on condition that
	// the circuit is still at c.Version and the fence admits the write.
	Transition(ctx context.Context, f lease.Fence, c Circuit, fl Flip) error
	// MarkApplied records that the trigger was set for episode at the time
	// given; SetApplyError that it could not be, why, and when to retry.
	// Both are refused if the circuit has moved to another episode.
	MarkApplied(ctx context.Context, f lease.Fence, appID, function string, episode int64, at time.Time) error
	SetApplyError(ctx context.Context, f lease.Fence, appID, function string, episode int64, problem string, attempts int, retryAt time.Time) error
	SetDrift(ctx context.Context, f lease.Fence, appID, function string, episode int64, drift string, now time.Time) error
	// Window returns the failure rows for seconds in [from, to], and the
	// unreadable rows not reported before. It may read only what changed
	// since its previous call.
	Window(ctx context.Context, from, to time.Time) ([]FailureRow, []Rejection, error)
	PutStatus(ctx context.Context, s Status) error
	// StoredStatus reads what PutStatus last stored (the zero Status if nothing).
	StoredStatus(ctx context.Context) (Status, error)
	// Flips returns up to limit flip-log entries, newest first.
	Flips(ctx context.Context, appID, function string, limit int) ([]Flip, error)
}

// Switch turns functions' triggers off and on for one kind of app.
type Switch interface {
	// Disabled returns the functions the app's settings switch off.
	Disabled(ctx context.Context, app App) (map[string]bool, error)
	// Apply switches each named function off (true) or on (false) in one
	// change of the app's settings, since each change restarts the app.
	// Settings it was not asked to change stay as they are.
	Apply(ctx context.Context, app App, off map[string]bool) error
}

// EvaluatorSettings tune the evaluator. Zero values take the defaults.
type EvaluatorSettings struct {
	Interval   time.Duration // between ticks; default 1s
	DriftEvery time.Duration // how often actual trigger settings are read back; default 30s
	// ApplyTimeout bounds one app's switch call, retries included; default 45s.
	ApplyTimeout time.Duration
	// Parallel bounds the apps switched at once; default 16. Each app has
	// at most one call in flight, so a slow app delays only itself.
	Parallel int
	// RetryFirst and RetryMax bound the backoff after a failed switch:
	// it doubles from RetryFirst up to RetryMax. Defaults 2s and 5m.
	RetryFirst, RetryMax time.Duration
	Clock                clock.Clock
	Logger               *slog.Logger
	Identity             string // reported as the leader in Status
	// OnTransition, if set, is told of each transition the evaluator made
	// and returns the context the switch call that applies it runs in
	// (tracing: the trip's span). It must not block.
	OnTransition func(ctx context.Context, c Circuit, fl Flip) context.Context
}

// Evaluator counts failures over each circuit's window, trips circuits,
// and makes triggers follow circuits. Run it under a lease: it assumes it
// is the only one acting, and fences every write it makes.
//
// A tick never calls a switch itself: it hands each app with work to a
// goroutine of that app's own (at most one per app, Parallel in all), so
// an app whose ARM endpoint hangs or throttles delays no other app's trip,
// and the next tick runs on time.
type Evaluator struct {
	store Store
	sw    Switch
	s     EvaluatorSettings

	rows     map[string]FailureRow // by ID, for seconds within the longest window
	rejected map[string]bool       // unreadable rows already counted, by ID
	drifted  map[string]time.Time  // by app: when its drift was last checked
	status   Status
	loaded   bool // the stored tally has been read this tenure

	slots    chan struct{}
	inflight sync.WaitGroup
	mu       sync.Mutex
	busy     map[string]bool // apps with a switch call in flight
}

// NewEvaluator fills defaults.
func NewEvaluator(store Store, sw Switch, s EvaluatorSettings) *Evaluator {
	if s.Interval <= 0 {
		s.Interval = time.Second
	}
	if s.DriftEvery <= 0 {
		s.DriftEvery = 30 * time.Second
	}
	if s.ApplyTimeout <= 0 {
		s.ApplyTimeout = 45 * time.Second
	}
	if s.Parallel <= 0 {
		s.Parallel = 16
	}
	if s.RetryFirst <= 0 {
		s.RetryFirst = 2 * time.Second
	}
	if s.RetryMax <= 0 {
		s.RetryMax = 5 * time.Minute
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{store: store, sw: sw, s: s, slots: make(chan struct{}, s.Parallel), busy: map[string]bool{}}
}

// Interval is the time between ticks.
func (e *Evaluator) Interval() time.Duration { return e.s.Interval }

// Begin starts a tenure: an empty memory and a full read. Call it each time
// the lease is acquired, before the first Tick.
func (e *Evaluator) Begin() {
	e.mu.Lock()
	e.rows, e.drifted, e.loaded = map[string]FailureRow{}, map[string]time.Time{}, false
	e.status = Status{Leader: e.s.Identity, Tally: NewTally()}
	e.mu.Unlock()
}

// Wait returns once no switch call is in flight: at the end of a tenure,
// and in tests that check what a tick's switch calls did.
func (e *Evaluator) Wait() { e.inflight.Wait() }

// Tick runs one pass: read new failures, evaluate every circuit, hand the
// apps whose triggers lag their circuits to their switch goroutines, and
// now and then look for drift.
func (e *Evaluator) Tick(ctx context.Context, f lease.Fence) error {
	if e.rows == nil {
		e.Begin()
	}
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
	if !e.loaded {
		e.loadTally(ctx)
	}
	e.countTransitionsByOthers(ctx, circuits)

	var errs []error
	off, total := map[string]int{}, map[string]int{} // per app: circuits off, circuits
	for _, c := range circuits {
		total[c.AppID]++
		if c.State.TriggerOff() && !c.Shadow {
			off[c.AppID]++
		}
	}
	byApp := map[string][]Circuit{} // each app's circuits as they now stand
	settled := make([]Circuit, 0, len(circuits))
	traced := map[string]context.Context{} // trace of each transition this tick, for its switch call
	for _, c := range circuits {
		next, fl := Evaluate(c, counts[c.ID()], now)
		if fl != nil && fl.To.TriggerOff() && !fl.From.TriggerOff() && !c.Shadow {
			if limit := appByID[c.AppID].Guardrail.Limit(total[c.AppID]); limit >= 0 && off[c.AppID]+1 > limit {
				held, hf := Hold(c, *fl, off[c.AppID], limit)
				next, fl = held, &hf
			} else {
				off[c.AppID]++
			}
		}
		if fl != nil {
			if err := e.store.Transition(ctx, f, next, *fl); err != nil {
				if errors.Is(err, lease.ErrFenced) {
					return err
				}
				errs = append(errs, err) // reread next tick
				settled = append(settled, c)
				continue
			}
			e.s.Logger.Info("circuit changed", "circuit", c.ID(), "from", fl.From.String(), "to", fl.To.String(), "episode", fl.Episode, "reason", fl.Reason)
			if e.s.OnTransition != nil {
				traced[c.ID()] = e.s.OnTransition(ctx, next, *fl)
			}
			e.mu.Lock()
			e.status.Tally.Count(c.AppID, fl.To, fl.Actor)
			e.mu.Unlock()
		}
		byApp[next.AppID] = append(byApp[next.AppID], next)
		settled = append(settled, next)
	}
	for appID, cs := range byApp {
		var due []Circuit
		for _, c := range cs {
			if c.Pending() && !now.Before(c.ApplyRetryAt) {
				due = append(due, c)
			}
		}
		e.mu.Lock()
		drift := now.Sub(e.drifted[appID]) >= e.s.DriftEvery
		e.mu.Unlock()
		if len(due) > 0 || drift {
			callCtx := ctx
			for _, c := range due {
				if tc, ok := traced[c.ID()]; ok {
					callCtx = tc // the switch call joins the trace of a trip it applies
					break
				}
			}
			e.dispatch(callCtx, f, appID, appByID, due, cs, drift, now)
		}
	}
	// Report every tick: one small write a second, and every instance's
	// pages can tell a stalled evaluator within three ticks.
	e.mu.Lock()
	e.status.Tally.Settle(settled, now)
	e.status.LastTickAt, e.status.TickDuration = now, e.s.Clock.Now().Sub(now)
	st := e.status
	st.Tally = cloneTally(e.status.Tally)
	e.mu.Unlock()
	if err := e.store.PutStatus(ctx, st); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// loadTally carries on the totals the previous leader stored.
func (e *Evaluator) loadTally(ctx context.Context) {
	prev, err := e.store.StoredStatus(ctx)
	if err != nil {
		e.s.Logger.Warn("could not read the stored totals; counting from zero", "error", err)
		e.loaded = true
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := prev.Tally
	t.fill()
	t.Episodes = map[string]int64{}
	e.status.Tally, e.loaded = t, true
}

// countTransitionsByOthers counts the transitions operators and links made
// since the last tick, by the actors their flips name.
func (e *Evaluator) countTransitionsByOthers(ctx context.Context, circuits []Circuit) {
	e.mu.Lock()
	seen := e.status.Tally.Episodes
	e.mu.Unlock()
	for _, c := range circuits {
		last, known := seen[c.ID()]
		if !known || c.Episode <= last {
			continue // first sight: its history is not this tenure's to count
		}
		flips, err := e.store.Flips(ctx, c.AppID, c.Function, int(min(c.Episode-last, 10)))
		if err != nil {
			e.s.Logger.Warn("could not read a circuit's flips for the totals", "circuit", c.ID(), "error", err)
			continue
		}
		e.mu.Lock()
		for _, f := range flips {
			if f.Episode > last {
				e.status.Tally.Count(c.AppID, f.To, f.Actor)
			}
		}
		e.mu.Unlock()
	}
}

// cloneTally copies a tally deeply, so it can be stored while switch calls
// go on counting into the original.
func cloneTally(t Tally) Tally {
	var c Tally
	if b, err := json.Marshal(t); err == nil {
		_ = json.Unmarshal(b, &c)
	}
	return c
}

// dispatch starts the app's switch goroutine unless one is in flight or
// every slot is taken; either way the tick goes on, and a later tick sees
// the work again.
func (e *Evaluator) dispatch(ctx context.Context, f lease.Fence, appID string, apps map[string]App, due, all []Circuit, drift bool, now time.Time) {
	e.mu.Lock()
	if e.busy[appID] {
		e.mu.Unlock()
		return
	}
	select {
	case e.slots <- struct{}{}:
	default:
		e.mu.Unlock()
		return
	}
	e.busy[appID] = true
	if drift {
		e.drifted[appID] = now
	}
	e.mu.Unlock()
	e.inflight.Add(1)
	go func() {
		defer func() {
			e.mu.Lock()
			delete(e.busy, appID)
			e.mu.Unlock()
			<-e.slots
			e.inflight.Done()
		}()
		app, ok := apps[appID]
		if !ok {
			e.failApply(ctx, f, due, fmt.Errorf("app %s is not registered: register it again on the Function apps page, or delete its circuits", appID))
			return
		}
		if len(due) > 0 {
			e.apply(ctx, f, app, due)
		}
		if drift {
			if err := e.checkDrift(ctx, f, app, all); err != nil && ctx.Err() == nil {
				e.s.Logger.Warn("drift check failed", "app", appID, "error", err)
				e.mu.Lock()
				delete(e.drifted, appID) // check again on the next tick, not a whole DriftEvery later
				e.mu.Unlock()
			}
		}
	}()
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
	// The store names every unreadable row each time; each counts once,
	// and rows that left the window are forgotten.
	seen := make(map[string]bool, len(rejected))
	for _, r := range rejected {
		seen[r.ID] = true
		if e.rejected[r.ID] {
			continue
		}
		e.status.Rejected++
		e.status.LastRejected, e.status.RejectedAt = r.ID+": "+r.Reason, now
		e.s.Logger.Warn("unreadable failure row skipped", "row", r.ID, "reason", r.Reason)
	}
	e.rejected = seen
	return nil
}

// CountWindows adds up, for each circuit, the failures in its window
// ending at now and those that count toward its next decision. Rows for
// seconds after now (a writer whose clock runs ahead) wait until their
// second comes.
func CountWindows(rows map[string]FailureRow, circuits []Circuit, now time.Time) map[string]Counts {
	type span struct{ window, counted time.Time }
	spans := make(map[string]span, len(circuits))
	counts := make(map[string]Counts, len(circuits))
	for _, c := range circuits {
		since := c.CountsFrom(now)
		spans[c.ID()] = span{now.Add(-c.Window), since}
		counts[c.ID()] = Counts{Since: since, Whole: !since.After(now.Add(-c.Window))}
	}
	for _, r := range rows {
		sp, ok := spans[r.Circuit]
		if !ok || r.Second.After(now) {
			continue
		}
		// A second [s, s+1) is in the window (now-W, now] when s > now-W,
		// so that whole seconds fall in or out; the second in which the
		// circuit last changed counts for the time before the change.
		if !r.Second.After(sp.window) {
			continue
		}
		n := counts[r.Circuit]
		n.Window += r.Count
		if r.Second.After(sp.counted) {
			n.Counted += r.Count
			n.Successes += r.Successes
			if r.TraceParent != "" && !r.Second.Before(n.newest) {
				n.TraceParent, n.newest = r.TraceParent, r.Second
			}
		}
		counts[r.Circuit] = n
	}
	return counts
}

// apply switches one app's lagging triggers in one call and records the
// outcome on each circuit. Circuits in shadow mode are recorded as applied
// without a switch: their trigger stays as it is.
func (e *Evaluator) apply(ctx context.Context, f lease.Fence, app App, due []Circuit) {
	off := make(map[string]bool, len(due))
	var armed []Circuit
	for _, c := range due {
		if c.Shadow {
			if err := e.store.MarkApplied(ctx, f, c.AppID, c.Function, c.Episode, e.s.Clock.Now()); err != nil {
				e.s.Logger.Warn("could not record a shadow circuit's episode", "circuit", c.ID(), "error", err)
			}
			continue
		}
		off[c.Function] = c.State.TriggerOff()
		armed = append(armed, c)
	}
	if len(armed) == 0 {
		return
	}
	due = armed
	callCtx, cancel := context.WithTimeout(ctx, e.s.ApplyTimeout)
	started := e.s.Clock.Now()
	err := e.sw.Apply(callCtx, app, off)
	cancel()
	if ctx.Err() == nil {
		e.mu.Lock()
		e.status.Tally.CountApply(app.Switch, err, e.s.Clock.Now().Sub(started))
		e.mu.Unlock()
	}
	if err != nil {
		if ctx.Err() != nil {
			return // the tenure ended; the next holder tries again
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s: %w", e.s.ApplyTimeout, err)
		}
		e.failApply(ctx, f, due, err)
		return
	}
	at := e.s.Clock.Now()
	for _, c := range due {
		if err := e.store.MarkApplied(ctx, f, c.AppID, c.Function, c.Episode, at); err != nil {
			// A newer episode is applied on a later tick.
			e.s.Logger.Warn("could not record a switched trigger", "circuit", c.ID(), "error", err)
			continue
		}
		e.s.Logger.Info("trigger switched", "circuit", c.ID(), "trigger", onOff(!c.State.TriggerOff()), "episode", c.Episode)
	}
}

// failApply records why the triggers could not be set and when to try
// again, doubling the wait each time up to RetryMax.
func (e *Evaluator) failApply(ctx context.Context, f lease.Fence, due []Circuit, cause error) {
	now := e.s.Clock.Now()
	for _, c := range due {
		attempts := c.ApplyAttempts + 1
		wait := min(e.s.RetryFirst<<min(attempts-1, 20), e.s.RetryMax)
		problem := fmt.Sprintf("could not switch the trigger %s: %v", onOff(!c.State.TriggerOff()), cause)
		if err := e.store.SetApplyError(ctx, f, c.AppID, c.Function, c.Episode, problem, attempts, now.Add(wait)); err != nil {
			e.s.Logger.Warn("could not record a failed switch", "circuit", c.ID(), "error", err)
		}
		e.s.Logger.Warn("trigger not switched", "circuit", c.ID(), "attempt", attempts, "retry_in", wait.String(), "error", cause)
	}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// checkDrift reads the app's actual settings and records circuits whose
// trigger was moved by someone else after Fusebox applied it.
func (e *Evaluator) checkDrift(ctx context.Context, f lease.Fence, app App, circuits []Circuit) error {
	callCtx, cancel := context.WithTimeout(ctx, e.s.ApplyTimeout)
	disabled, err := e.sw.Disabled(callCtx, app)
	cancel()
	if err != nil {
		return fmt.Errorf("app %s: read trigger settings: %w", app.ID, err)
	}
	var errs []error
	now := e.s.Clock.Now()
	for _, c := range circuits {
		if c.Pending() || c.Shadow {
			continue // not applied yet, or never switched: not drift
		}
		drift := DriftOf(c, disabled[c.Function])
		if drift == c.Drift {
			continue
		}
		if err := e.store.SetDrift(ctx, f, c.AppID, c.Function, c.Episode, drift, now); err != nil {
			errs = append(errs, err)
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
