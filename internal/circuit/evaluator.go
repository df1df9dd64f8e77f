package circuit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

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
// The evaluator orchestrates: the decision is Decide's (decide.go), the
// switch calls and drift checks the switcher's (dispatch.go), the totals
// the books' (books.go); storage keeps the window's rows.
type Evaluator struct {
	store Stores
	s     EvaluatorSettings
	sw    *switcher
	books *books

	// What the last tick counted and the reports stored since, so that a
	// report that may change a circuit is checked at once (CheckReported).
	mu       sync.Mutex
	begun    bool
	known    map[string]Counts
	current  map[string]Circuit
	apps     map[string]App
	added    map[string]Counts
	life     context.Context // the loop's, for checks the ingest path starts
	checking map[string]bool // circuits with a check in flight
	checks   sync.WaitGroup
	wake     chan struct{}
}

// NewEvaluator fills defaults. Claims has none: without it no switch call
// could be made safely beside other instances.
func NewEvaluator(store Stores, sw Switch, s EvaluatorSettings) *Evaluator {
	if s.Claims == nil {
		panic("circuit: EvaluatorSettings.Claims is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&s.Interval, time.Second)
	def(&s.DriftEvery, 30*time.Second)
	def(&s.ApplyTimeout, 45*time.Second)
	def(&s.RetryFirst, 2*time.Second)
	def(&s.RetryMax, 5*time.Minute)
	if s.Parallel <= 0 {
		s.Parallel = 16
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{store: store, s: s, sw: newSwitcher(store, sw, s), books: &books{store: store, log: s.Logger, identity: s.Identity},
		wake: make(chan struct{}, 1), checking: map[string]bool{}}
}

// EarlyTicks fires when a report may have changed a circuit (see CheckReported): the
// loop runs a tick then rather than at the next interval.
func (e *Evaluator) EarlyTicks() <-chan struct{} { return e.wake }

// TickNow wakes a tick at once: this instance has just taken the books over,
// and the pages should not wait a whole interval for their status.
func (e *Evaluator) TickNow() { e.askForTick() }

func (e *Evaluator) askForTick() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Applies returns this instance's own switch calls by kind and outcome,
// and their latency: counters per process, as Prometheus expects.
func (e *Evaluator) Applies() (map[string]map[string]int64, map[string]*Histogram) {
	return e.sw.applies()
}

// Interval is the time between ticks.
func (e *Evaluator) Interval() time.Duration { return e.s.Interval }

// Begin starts a tenure: an empty memory and a full read. Call it each time
// the lease is acquired, before the first Tick.
func (e *Evaluator) Begin() {
	e.sw.forgetDrift()
	e.books.begin()
	e.mu.Lock()
	e.begun = true
	e.known, e.current, e.added, e.apps = map[string]Counts{}, map[string]Circuit{}, map[string]Counts{}, map[string]App{}
	e.mu.Unlock()
}

// Wait returns once no check and no switch call is in flight: at the end
// of a tenure, and in tests that check what a tick's switch calls did.
func (e *Evaluator) Wait() {
	e.checks.Wait() // a check dispatches before it ends
	e.sw.inflight.Wait()
}

// Tick runs one pass: read new failures, decide every circuit, and hand
// the apps whose triggers lag their circuits to their switch goroutines.
// keeper is the books' lease when this instance holds it (zero otherwise):
// then the tick also looks for drift now and then, and stores the status.
func (e *Evaluator) Tick(ctx context.Context, keeper lease.Fence) error {
	e.mu.Lock()
	begun := e.begun
	e.mu.Unlock()
	if !begun {
		e.Begin()
	}
	keeping := keeper.Lease != ""
	e.books.keep(keeper)
	e.mu.Lock()
	e.added = map[string]Counts{} // what was reported before now is in this tick's read
	e.life = ctx
	e.mu.Unlock()
	now := e.s.Clock.Now()
	circuits, apps, rows, err := e.read(ctx, now)
	if err != nil {
		return err
	}
	counts := CountRows(rows, circuits, now)
	read := e.s.Clock.Now()
	if keeping {
		e.books.load(ctx, now)
	}
	settled, byApp, traced, errs := e.decide(ctx, circuits, apps, counts, now, read)
	for appID, cs := range byApp {
		var due []Circuit
		for _, c := range cs {
			if c.Pending() && !now.Before(c.ApplyRetryAt) {
				due = append(due, c)
			}
		}
		drift := keeping && e.sw.driftDue(appID, now)
		if len(due) == 0 && !drift {
			continue
		}
		callCtx := ctx
		for _, c := range due {
			if tc, ok := traced[c.ID()]; ok {
				callCtx = tc // the switch call joins the trace of a trip it applies
				break
			}
		}
		e.sw.dispatch(callCtx, appID, apps, due, cs, drift, now)
	}
	e.remember(settled, counts, apps)
	if !keeping {
		return errors.Join(errs...)
	}
	e.books.count(ctx, settled, now)
	if err := e.books.publish(ctx, settled, now, e.s.Clock.Now()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// read is a tick's reads: every circuit and app, and the failure rows of
// the longest window (storage reads only what changed since its last).
func (e *Evaluator) read(ctx context.Context, now time.Time) ([]Circuit, map[string]App, []FailureRow, error) {
	circuits, err := e.store.Circuits.List(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	apps, err := e.store.Apps.List(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	appByID := make(map[string]App, len(apps))
	for _, a := range apps {
		appByID[a.ID] = a
	}
	longest := time.Duration(0)
	for _, c := range circuits {
		longest = max(longest, c.Window)
	}
	rows, rejected, err := e.store.Failures.Window(ctx, now.Add(-longest).Truncate(time.Second), now)
	if err != nil {
		return nil, nil, nil, err
	}
	e.books.reject(rejected, now)
	// The window's rows come once each, shared with every other reader
	// of them: counted where they are, not copied into a map each tick.
	return circuits, appByID, rows, nil
}

// decide writes what Decide makes of each circuit: settled is every
// circuit as it now stands, byApp those this tick may switch, traced the
// trace of each transition it wrote, for its switch call.
func (e *Evaluator) decide(ctx context.Context, circuits []Circuit, apps map[string]App, counts map[string]Counts, now, read time.Time) (
	settled []Circuit, byApp map[string][]Circuit, traced map[string]context.Context, errs []error) {
	off, total := map[string]int{}, map[string]int{} // per app: circuits off, circuits
	for _, c := range circuits {
		total[c.AppID]++
		if c.State.TriggerOff() && !c.Shadow {
			off[c.AppID]++
		}
	}
	settled, byApp, traced = make([]Circuit, 0, len(circuits)), map[string][]Circuit{}, map[string]context.Context{}
	for _, c := range circuits {
		guardrail := apps[c.AppID].Guardrail
		d := Decide(c, counts[c.ID()], now, guardrail, off[c.AppID], total[c.AppID])
		next, fl := d.Next, d.Flip
		if d.Guarded {
			off[c.AppID]++
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
			if !d.Guarded {
				err = e.store.Circuits.Transition(ctx, lease.Fence{}, next, *fl)
			} else {
				// Every instance ticks: the count of circuits off is part
				// of the write, so two instances' trips decided on one
				// reading cannot both land.
				err = e.store.Circuits.TransitionGuarded(ctx, lease.Fence{}, next, *fl, func(app []Circuit, unreadable int) error {
					return guardrail.Admits(app, unreadable, c)
				})
				var held *GuardrailHeld
				if errors.As(err, &held) {
					off[c.AppID]--
					hc, hf := Hold(c, *fl, held.Off, held.Limit)
					next, fl = hc, &hf
					err = e.store.Circuits.Transition(ctx, lease.Fence{}, next, *fl)
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
	return settled, byApp, traced, errs
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

// remember keeps what this tick counted, for CheckReported.
func (e *Evaluator) remember(circuits []Circuit, counts map[string]Counts, apps map[string]App) {
	current := make(map[string]Circuit, len(circuits))
	for _, c := range circuits {
		current[c.ID()] = c
	}
	e.mu.Lock()
	e.current, e.known, e.apps = current, counts, apps
	e.mu.Unlock()
}

// decisionAge bounds the time between a tick's reads and a transition it
// writes. The circuit's version already refuses a decision once anyone
// moved the circuit; this refuses one that is merely old.
func (e *Evaluator) decisionAge() time.Duration { return max(5*e.s.Interval, 5*time.Second) }
