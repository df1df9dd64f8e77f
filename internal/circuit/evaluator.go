package circuit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
	// GetCircuit reads one circuit afresh, as storage holds it now.
	GetCircuit(ctx context.Context, appID, function string) (Circuit, error)
	// CircuitWindow reads one circuit's failure rows for seconds in
	// [from, to] afresh: the read a report that may trip it costs.
	CircuitWindow(ctx context.Context, appID, function string, from, to time.Time) ([]FailureRow, error)
	// Transition records a state change and its flip on condition that
	// the circuit is still at c.Version and the fence admits the write.
	Transition(ctx context.Context, f lease.Fence, c Circuit, fl Flip) error
	// TransitionGuarded is Transition for a trip the app's guardrail
	// limits: admit is asked, on every circuit of the app as storage holds
	// it after a read of the app's guard version, whether the trip may
	// happen, and the write is conditional on that version too. admit's
	// error comes back as it is.
	TransitionGuarded(ctx context.Context, f lease.Fence, c Circuit, fl Flip, admit func(app []Circuit, unreadable int) error) error
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

// Claimer takes short claims on one piece of work: a lease.Locker with
// short timings. A claim lapses when its holder stops renewing it, so work
// a frozen instance had claimed moves to another within the claim's
// Duration.
type Claimer interface {
	TryAcquire(ctx context.Context, name string) (*lease.Lease, error)
	Settings() lease.Settings
}

// SwitchClaim names the claim under which an app's trigger settings are
// read and written: one switch call per app at a time, across instances.
func SwitchClaim(appID string) string { return "switch/" + appID }

// EvaluatorSettings tune the evaluator. Zero values take the defaults.
type EvaluatorSettings struct {
	// Claims serialise each app's switch calls across instances. Required.
	Claims     Claimer
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
// and makes triggers follow circuits. Every instance runs one, so that a
// trip never waits for a frozen instance's lease to lapse:
//
//   - a transition is a write conditional on the circuit's version (ETag),
//     so of the instances that decide the same change one writes it, and a
//     decision made before a pause is refused once anyone moved the circuit;
//   - an app's switch call runs under the app's claim (SwitchClaim): one
//     call per app at a time, applying what storage holds once the claim is
//     taken, and the claim's generation fences what the call records;
//   - the instance that holds the evaluator's lease also keeps the books:
//     drift checks and the status and totals the pages and metrics show.
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
	loaded   bool        // the stored tally has been read this tenure of the books
	keeper   lease.Fence // the books' lease while this instance holds it
	// countedUntil is the time up to which transitions are in the totals.
	countedUntil time.Time
	tenureFrom   time.Time            // the books' tenure counts flips from here on
	counted      map[string]time.Time // flips counted lately, by circuit and episode: a flip at the edge counts once
	local        Tally                // this instance's own switch calls, for its metrics

	// What the last tick counted and the reports stored since, so that a
	// report that may change a circuit wakes a tick at once (Nudge).
	known    map[string]Counts
	current  map[string]Circuit
	apps     map[string]App
	added    map[string]Counts
	wake     chan struct{}
	life     context.Context // the loop's, for checks the ingest path starts
	checking map[string]bool // circuits with a check in flight

	slots    chan struct{}
	inflight sync.WaitGroup
	mu       sync.Mutex
	busy     map[string]bool            // apps with a switch call in flight
	again    map[string]bool            // apps given more work while one was
	hints    map[string]map[string]bool // by app: functions a tick saw lagging
}

// NewEvaluator fills defaults. Claims has none: without it no switch call
// could be made safely beside other instances.
func NewEvaluator(store Store, sw Switch, s EvaluatorSettings) *Evaluator {
	if s.Claims == nil {
		panic("circuit: EvaluatorSettings.Claims is required")
	}
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
	return &Evaluator{store: store, sw: sw, s: s, slots: make(chan struct{}, s.Parallel), busy: map[string]bool{}, again: map[string]bool{}, hints: map[string]map[string]bool{},
		local: NewTally(), wake: make(chan struct{}, 1), checking: map[string]bool{}}
}

// Wake fires when a report may have changed a circuit (see Nudge): the
// loop runs a tick then rather than at the next interval.
func (e *Evaluator) Wake() <-chan struct{} { return e.wake }

// Poke wakes a tick at once: this instance has just taken the books over,
// and the pages should not wait a whole interval for their status.
func (e *Evaluator) Poke() { e.wakeUp() }

func (e *Evaluator) wakeUp() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Reported is what one stored report added to a circuit's counts.
type Reported struct {
	AppID, Function     string
	Failures, Successes int
}

// Nudge tells the evaluator of reports this instance has just stored. When
// they, added to what the last tick counted, could change a circuit, it
// checks that circuit at once (check): its row and its window's rows,
// read afresh. A circuit far from its threshold costs nothing: no storage
// read, only this arithmetic.
func (e *Evaluator) Nudge(reports []Reported) {
	now := e.s.Clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range reports {
		id := r.AppID + "/" + r.Function
		c, ok := e.current[id]
		if !ok {
			continue
		}
		a := e.added[id]
		a.Counted += r.Failures
		a.Successes += r.Successes
		e.added[id] = a
		n := e.known[id]
		n.Window, n.Counted, n.Successes = n.Window+a.Counted, n.Counted+a.Counted, n.Successes+a.Successes
		if !CouldChange(c, n, now) {
			continue
		}
		if e.life == nil || e.checking[id] {
			e.wakeUp() // no loop yet, or a check in flight: the tick decides
			continue
		}
		e.checking[id] = true
		e.inflight.Add(1)
		life := e.life
		go func() {
			defer func() {
				e.mu.Lock()
				delete(e.checking, id)
				e.mu.Unlock()
				e.inflight.Done()
			}()
			e.check(life, r.AppID, r.Function)
		}()
	}
}

// check decides one circuit now, as a tick would, from its row and its
// window read afresh: the trip a report causes need not wait for the next
// tick, nor for a whole tick's reads. It leaves to the tick what weighs
// other circuits (an app's guardrail) and anything it cannot read.
func (e *Evaluator) check(ctx context.Context, appID, function string) {
	c, err := e.store.GetCircuit(ctx, appID, function)
	if err != nil {
		e.s.Logger.Warn("could not read a reported circuit; the next tick decides", "circuit", appID+"/"+function, "error", err)
		e.wakeUp()
		return
	}
	now := e.s.Clock.Now()
	rows, err := e.store.CircuitWindow(ctx, appID, function, now.Add(-c.Window).Truncate(time.Second), now)
	if err != nil {
		e.s.Logger.Warn("could not read a reported circuit's window; the next tick decides", "circuit", c.ID(), "error", err)
		e.wakeUp()
		return
	}
	byID := make(map[string]FailureRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	next, fl := Evaluate(c, CountWindows(byID, []Circuit{c}, now)[c.ID()], now)
	if fl == nil {
		return
	}
	e.mu.Lock()
	app, known := e.apps[appID]
	apps := e.apps
	total := 0
	for _, o := range e.current {
		if o.AppID == appID {
			total++
		}
	}
	e.mu.Unlock()
	if !known || (fl.To.TriggerOff() && !fl.From.TriggerOff() && !c.Shadow && app.Guardrail.Limit(total) >= 0) {
		e.wakeUp()
		return
	}
	if err := e.store.Transition(ctx, lease.Fence{}, next, *fl); err != nil {
		if !errors.Is(err, ErrConflict) {
			e.wakeUp()
		}
		return // or another instance, or the tick, made it first
	}
	e.dispatch(e.announce(ctx, next, *fl, "report"), appID, apps, []Circuit{next}, nil, false, now)
	// A tick now, not a second later: on the keeper of the books it counts
	// the trip from the flip log and stores the status the pages read.
	e.wakeUp()
}

// Applies returns this instance's own switch calls by kind and outcome,
// and their latency: counters per process, as Prometheus expects.
func (e *Evaluator) Applies() (map[string]map[string]int64, map[string]*Histogram) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := cloneTally(e.local)
	return c.Applies, c.ApplyLatency
}

// Interval is the time between ticks.
func (e *Evaluator) Interval() time.Duration { return e.s.Interval }

// Begin starts a tenure: an empty memory and a full read. Call it each time
// the lease is acquired, before the first Tick.
func (e *Evaluator) Begin() {
	e.mu.Lock()
	e.rows, e.drifted, e.loaded, e.keeper = map[string]FailureRow{}, map[string]time.Time{}, false, lease.Fence{}
	e.known, e.current, e.added, e.apps = map[string]Counts{}, map[string]Circuit{}, map[string]Counts{}, map[string]App{}
	e.status = Status{Leader: e.s.Identity, Tally: NewTally()}
	e.mu.Unlock()
}

// Wait returns once no switch call is in flight: at the end of a tenure,
// and in tests that check what a tick's switch calls did.
func (e *Evaluator) Wait() { e.inflight.Wait() }

// Tick runs one pass: read new failures, evaluate every circuit, and hand
// the apps whose triggers lag their circuits to their switch goroutines.
// keeper is the books' lease when this instance holds it (zero otherwise):
// then the tick also looks for drift now and then, and stores the status.
func (e *Evaluator) Tick(ctx context.Context, keeper lease.Fence) error {
	if e.rows == nil {
		e.Begin()
	}
	keeping := keeper.Lease != ""
	e.mu.Lock()
	if keeping && keeper != e.keeper {
		e.loaded = false // a new tenure of the books carries the stored totals on
	}
	e.keeper = keeper
	e.added = map[string]Counts{} // what was reported before now is in this tick's read
	e.life = ctx
	e.mu.Unlock()
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
	read := e.s.Clock.Now()
	if keeping && !e.loaded {
		e.loadTally(ctx, now)
	}

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
		guardrail := appByID[c.AppID].Guardrail
		guarded := false // a trip the guardrail weighs: storage weighs it again
		if fl != nil && fl.To.TriggerOff() && !fl.From.TriggerOff() && !c.Shadow {
			if limit := guardrail.Limit(total[c.AppID]); limit >= 0 && off[c.AppID]+1 > limit {
				held, hf := Hold(c, *fl, off[c.AppID], limit)
				next, fl = held, &hf
			} else {
				off[c.AppID]++
				guarded = limit >= 0
			}
		}
		if fl != nil {
			if age := e.s.Clock.Now().Sub(read); age > e.decisionAge() {
				// This process was paused, or storage crawled: decide
				// again on fresh reads rather than act on old ones.
				errs = append(errs, fmt.Errorf("circuit %s: not changed on counts read %s ago; the next tick decides again", c.ID(), age.Round(time.Millisecond)))
				settled = append(settled, c)
				continue
			}
			var err error
			if !guarded {
				err = e.store.Transition(ctx, lease.Fence{}, next, *fl)
			} else {
				// Every instance ticks: the count of circuits off is part
				// of the write, so two instances' trips decided on one
				// reading cannot both land.
				err = e.store.TransitionGuarded(ctx, lease.Fence{}, next, *fl, func(app []Circuit, unreadable int) error {
					return guardrail.Admits(app, unreadable, c)
				})
				var held *GuardrailHeld
				if errors.As(err, &held) {
					off[c.AppID]--
					hc, hf := Hold(c, *fl, held.Off, held.Limit)
					next, fl = hc, &hf
					err = e.store.Transition(ctx, lease.Fence{}, next, *fl)
				}
			}
			if err != nil {
				if !errors.Is(err, ErrConflict) {
					errs = append(errs, err)
				}
				// Moved since it was read (another instance made the same
				// change, or an operator another): read again next tick.
				settled = append(settled, c)
				continue
			}
			traced[c.ID()] = e.announce(ctx, next, *fl, "tick")
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
		drift := keeping && now.Sub(e.drifted[appID]) >= e.s.DriftEvery
		e.mu.Unlock()
		if len(due) > 0 || drift {
			callCtx := ctx
			for _, c := range due {
				if tc, ok := traced[c.ID()]; ok {
					callCtx = tc // the switch call joins the trace of a trip it applies
					break
				}
			}
			e.dispatch(callCtx, appID, appByID, due, cs, drift, now)
		}
	}
	e.remember(settled, counts, appByID)
	if !keeping {
		return errors.Join(errs...)
	}
	e.countTransitions(ctx, settled, now)
	// The keeper reports every tick: one small write a second, and every
	// instance's pages can tell stalled books within three ticks.
	e.mu.Lock()
	e.status.Tally.Settle(settled, now)
	e.status.Tally.Counted = e.countedSince(now.Add(-countMargin))
	e.status.LastTickAt, e.status.TickDuration = now, e.s.Clock.Now().Sub(now)
	st := e.status
	st.Tally = cloneTally(e.status.Tally)
	e.mu.Unlock()
	if err := e.store.PutStatus(ctx, st); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// announce logs a transition this instance wrote and returns the context
// its switch call runs in (OnTransition's: the trip's trace).
func (e *Evaluator) announce(ctx context.Context, next Circuit, fl Flip, by string) context.Context {
	e.s.Logger.Info("circuit changed", "circuit", next.ID(), "from", fl.From.String(), "to", fl.To.String(), "episode", fl.Episode, "reason", fl.Reason, "by", by)
	if e.s.OnTransition != nil {
		return e.s.OnTransition(ctx, next, fl)
	}
	return ctx
}

// remember keeps what this tick counted, for Nudge.
func (e *Evaluator) remember(circuits []Circuit, counts map[string]Counts, apps map[string]App) {
	current := make(map[string]Circuit, len(circuits))
	for _, c := range circuits {
		current[c.ID()] = c
	}
	e.mu.Lock()
	e.current, e.known, e.apps = current, counts, apps
	e.mu.Unlock()
}

// countMargin is how far before the last count the books look again for
// flips decided then and written since.
const countMargin = 10 * time.Second

// decisionAge bounds the time between a tick's reads and a transition it
// writes. The circuit's version already refuses a decision once anyone
// moved the circuit; this refuses one that is merely old.
func (e *Evaluator) decisionAge() time.Duration { return max(5*e.s.Interval, 5*time.Second) }

// loadTally carries on the totals the previous keeper stored, which
// counted the transitions up to its last tick.
func (e *Evaluator) loadTally(ctx context.Context, now time.Time) {
	prev, err := e.store.StoredStatus(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	// With no totals stored, the last minute's transitions are counted.
	e.loaded, e.countedUntil, e.counted = true, now.Add(-time.Minute), map[string]time.Time{}
	// The stored totals name the flips they counted within the look-back,
	// so a new tenure looks back as far as its predecessor did.
	defer func() { e.tenureFrom = e.countedUntil.Add(-countMargin) }()
	if err != nil {
		e.s.Logger.Warn("could not read the stored totals; counting from zero", "error", err)
		return
	}
	t := prev.Tally
	t.fill()
	e.status.Tally = t
	if !t.At.IsZero() {
		e.countedUntil = t.At
		for _, key := range t.Counted {
			e.counted[key] = t.At
		}
	}
}

// countTransitions adds to the totals every transition made since the
// books were last counted (from that instant on: a flip made in the same
// instant as the last count is counted once, by its episode), by whoever made it (this instance's ticks and
// checks, other instances, operators, links), read from the flip logs of
// the circuits that changed since: by the flips' times, so a transition is
// counted once whichever instance keeps the books. circuits are the ones
// this tick settled, its own transitions included.
func (e *Evaluator) countTransitions(ctx context.Context, circuits []Circuit, now time.Time) {
	e.mu.Lock()
	// A flip carries the time its change was decided, which can be a
	// moment before it was written (a report's check, a paused tick): look
	// back a margin, within this tenure, and count each flip once by its
	// episode.
	since := e.countedUntil.Add(-countMargin)
	if since.Before(e.tenureFrom) {
		since = e.tenureFrom
	}
	e.mu.Unlock()
	for _, c := range circuits {
		if c.ChangedAt.Before(since) {
			continue
		}
		flips, err := e.store.Flips(ctx, c.AppID, c.Function, 10)
		if err != nil {
			e.s.Logger.Warn("could not read a circuit's flips for the totals", "circuit", c.ID(), "error", err)
			continue
		}
		e.mu.Lock()
		for _, f := range flips {
			key := fmt.Sprintf("%s#%d", c.ID(), f.Episode)
			if f.At.Before(since) || f.At.After(now) || e.counted[key] != (time.Time{}) {
				continue
			}
			e.counted[key] = f.At
			e.status.Tally.Count(c.AppID, f.To, f.Actor)
		}
		e.mu.Unlock()
	}
	e.mu.Lock()
	e.countedUntil = now
	for key, at := range e.counted {
		if at.Before(now.Add(-10 * time.Minute)) {
			delete(e.counted, key)
		}
	}
	e.mu.Unlock()
}

// countedSince names the flips counted that were made at from or later,
// sorted; call with e.mu held.
func (e *Evaluator) countedSince(from time.Time) []string {
	var keys []string
	for key, at := range e.counted {
		if !at.Before(from) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
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
func (e *Evaluator) dispatch(ctx context.Context, appID string, apps map[string]App, due, all []Circuit, drift bool, now time.Time) {
	e.mu.Lock()
	for _, c := range due {
		if e.hints[appID] == nil {
			e.hints[appID] = map[string]bool{}
		}
		e.hints[appID][c.Function] = true
	}
	if e.busy[appID] {
		// The goroutine in flight looks again when it is done: a trip
		// made during an app's drift check or switch call does not wait
		// for the next tick.
		e.again[appID] = true
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
			<-e.slots
			e.inflight.Done()
		}()
		for {
			e.switchApp(ctx, appID, apps, all, drift)
			e.mu.Lock()
			again := e.again[appID] && ctx.Err() == nil
			delete(e.again, appID)
			if !again {
				delete(e.busy, appID)
			}
			e.mu.Unlock()
			if !again {
				return
			}
			drift = false
		}
	}()
}

// switchApp applies what storage holds for the app's lagging triggers,
// under its claim, and checks its drift when asked (all is the app's
// circuits as the tick read them; drift notes are conditional on each
// one's episode).
func (e *Evaluator) switchApp(ctx context.Context, appID string, apps map[string]App, all []Circuit, drift bool) {
	e.claimed(ctx, appID, func(ctx context.Context, f lease.Fence) {
		e.mu.Lock()
		hinted := e.hints[appID]
		delete(e.hints, appID)
		e.mu.Unlock()
		// What storage holds now, once the claim is ours: another
		// instance may have switched them in the meantime, or an
		// operator moved them on. A point read each: an app may have
		// thousands of circuits, and only these lag.
		now := e.s.Clock.Now()
		var due []Circuit
		for function := range hinted {
			c, err := e.store.GetCircuit(ctx, appID, function)
			if err != nil {
				if !errors.Is(err, ErrNotFound) {
					e.s.Logger.Warn("could not read a circuit to switch it; the next tick tries again", "circuit", appID+"/"+function, "error", err)
				}
				continue
			}
			if c.Pending() && !now.Before(c.ApplyRetryAt) {
				due = append(due, c)
			}
		}
		sort.Slice(due, func(i, j int) bool { return due[i].Function < due[j].Function })
		app, ok := apps[appID]
		if !ok {
			if len(due) > 0 {
				e.failApply(ctx, f, due, fmt.Errorf("app %s is not registered: register it again on the Function apps page, or delete its circuits", appID))
			}
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
	})
}

// claimed runs work under the app's switch claim. While another instance
// holds it, it tries again until the holder finishes (and this finds
// nothing left to do) or its claim lapses, for at most ApplyTimeout: every
// claim retry period for twice the claim's Duration, so a frozen holder's
// claim is taken about a Duration after it froze, then once a Duration, so
// a holder whose call merely takes long costs a read a second.
// work's context ends if the claim is lost.
func (e *Evaluator) claimed(ctx context.Context, appID string, work func(context.Context, lease.Fence)) {
	started := time.Now() // claims run on the real clock, like the leases they are
	cs := e.s.Claims.Settings()
	for {
		le, err := e.s.Claims.TryAcquire(ctx, SwitchClaim(appID))
		if err == nil {
			wctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(le.Context(), cancel)
			work(wctx, le.Fence())
			stop()
			cancel()
			rctx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := le.Release(rctx); err != nil {
				e.s.Logger.Warn("could not release an app's switch claim; it will lapse", "app", appID, "error", err)
			}
			done()
			return
		}
		if !errors.Is(err, lease.ErrHeld) {
			if ctx.Err() == nil {
				e.s.Logger.Warn("could not claim an app's switch; the next tick tries again", "app", appID, "error", err)
			}
			return
		}
		if time.Since(started) >= e.s.ApplyTimeout {
			return
		}
		wait := cs.RetryPeriod
		if time.Since(started) > 2*cs.Duration {
			wait = cs.Duration
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
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
		since, id := c.CountsFrom(now), c.ID() // an ID is built each call: once here, 10,000 times a tick at scale
		spans[id] = span{now.Add(-c.Window), since}
		counts[id] = Counts{Since: since, Whole: !since.After(now.Add(-c.Window))}
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
		e.local.CountApply(app.Switch, err, e.s.Clock.Now().Sub(started))
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
