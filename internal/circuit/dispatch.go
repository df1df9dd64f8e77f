package circuit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
)

// switcher makes triggers follow circuits. A tick never calls a switch
// itself: it hands each app with work to a goroutine of that app's own
// (at most one per app, Parallel in all), so an app whose ARM endpoint
// hangs or throttles delays no other app's trip, and the next tick runs on
// time. Now and then it reads an app's actual settings back, for drift.
// It keeps its own lock: no decision waits for a switch call's books.
type switcher struct {
	store Stores
	sw    Switch
	s     EvaluatorSettings

	slots    chan struct{}
	inflight sync.WaitGroup
	mu       sync.Mutex
	busy     map[string]bool // apps with a switch call in flight
	// again are the apps given more work while a switch call was in
	// flight, with the context of that work (a trip's trace, which the
	// next call joins).
	again   map[string]context.Context
	hints   map[string]map[string]string // by app: functions a tick saw lagging, and what it saw (seen)
	drifted map[string]time.Time         // by app: when its drift was last checked
	// switchedFrom is, by circuit, what this instance last switched its
	// trigger from (seen): a tick that read the circuit before that switch
	// was recorded sees it lagging still, and is not a reason to read it
	// again.
	// At most maxSwitchedFrom circuits, about 150 bytes each.
	switchedFrom map[string]string
	local        Tally // this instance's own switch calls, for its metrics
}

// maxSwitchedFrom bounds switchedFrom: its keys are stored circuits'
// ids, and circuits deleted since are not forgotten one by one.
const maxSwitchedFrom = 50_000

func newSwitcher(store Stores, sw Switch, s EvaluatorSettings) *switcher {
	return &switcher{store: store, sw: sw, s: s, slots: make(chan struct{}, s.Parallel), busy: map[string]bool{}, again: map[string]context.Context{},
		hints: map[string]map[string]string{}, drifted: map[string]time.Time{}, switchedFrom: map[string]string{}, local: NewTally()}
}

// forgetDrift starts a tenure: every app's drift is checked afresh.
func (w *switcher) forgetDrift() {
	w.mu.Lock()
	w.drifted = map[string]time.Time{}
	w.mu.Unlock()
}

// driftDue says whether the app's settings are due to be read back.
func (w *switcher) driftDue(appID string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return now.Sub(w.drifted[appID]) >= w.s.DriftEvery
}

// applies returns this instance's own switch calls by kind and outcome,
// and their latency.
func (w *switcher) applies() (map[string]map[string]int64, map[string]*Histogram) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.local.Clone()
	return c.Applies, c.ApplyLatency
}

// seen names what a reader saw of a circuit: its version, its actuation's
// and its episode (a transition's next state carries the version it was
// decided on, and a new episode; a reapply changes only the actuation).
func seen(c Circuit) string {
	if c.Version == "" {
		return ""
	}
	return c.Version + "|" + c.Actuation.Version + "|" + strconv.FormatInt(c.Episode, 10)
}

// dispatch starts the app's switch goroutine unless one is in flight or
// every slot is taken; either way the tick goes on, and a later tick sees
// the work again.
func (w *switcher) dispatch(ctx context.Context, appID string, apps map[string]App, due, all []Circuit, drift bool, now time.Time) {
	w.mu.Lock()
	hinted := 0
	for _, c := range due {
		if c.Version != "" && w.switchedFrom[c.ID()] == seen(c) {
			continue // read before this instance's switch was recorded
		}
		hinted++
		if w.hints[appID] == nil {
			w.hints[appID] = map[string]string{}
		}
		w.hints[appID][c.Function] = seen(c)
	}
	if len(due) > 0 && hinted == 0 && !drift {
		w.mu.Unlock()
		return
	}
	if w.busy[appID] {
		// The goroutine in flight looks again when it is done: a trip
		// made during an app's drift check or switch call does not wait
		// for the next tick.
		w.again[appID] = ctx
		w.mu.Unlock()
		return
	}
	select {
	case w.slots <- struct{}{}:
	default:
		w.mu.Unlock()
		return
	}
	w.busy[appID] = true
	if drift {
		w.drifted[appID] = now
	}
	w.mu.Unlock()
	w.inflight.Add(1)
	go func() {
		defer func() {
			<-w.slots
			w.inflight.Done()
		}()
		for {
			w.switchApp(ctx, appID, apps, all, drift)
			w.mu.Lock()
			next, again := w.again[appID]
			again = again && next.Err() == nil
			delete(w.again, appID)
			if !again {
				delete(w.busy, appID)
			}
			w.mu.Unlock()
			if !again {
				return
			}
			ctx, drift = next, false
		}
	}()
}

// switchApp applies what storage holds for the app's lagging triggers,
// under its claim, and checks its drift when asked (all is the app's
// circuits as the tick read them; drift notes are conditional on each
// one's episode).
func (w *switcher) switchApp(ctx context.Context, appID string, apps map[string]App, all []Circuit, drift bool) {
	w.claimed(ctx, appID, func(ctx context.Context, f lease.Fence) {
		w.mu.Lock()
		hinted := w.hints[appID]
		delete(w.hints, appID)
		w.mu.Unlock()
		// What storage holds now, once the claim is ours: another
		// instance may have switched them in the meantime, or an
		// operator moved them on. A point read each: an app may have
		// thousands of circuits, and only these lag.
		now := w.s.Clock.Now()
		var due []Circuit
		for function, version := range hinted {
			w.mu.Lock()
			stale := version != "" && w.switchedFrom[appID+"/"+function] == version
			w.mu.Unlock()
			if stale {
				continue // this instance switched it from the version the hint saw
			}
			c, err := w.store.Circuits.Get(ctx, appID, function)
			if err != nil {
				if !errors.Is(err, ErrNotFound) {
					w.s.Logger.Warn("could not read a circuit to switch it; the next tick tries again", "circuit", appID+"/"+function, "error", err)
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
				w.failApply(ctx, f, due, fmt.Errorf("app %s is not registered: register it again on the Function apps page, or delete its circuits", appID))
			}
			return
		}
		if len(due) > 0 {
			w.apply(ctx, f, app, due, all)
		}
		if drift {
			if err := w.checkDrift(ctx, f, app, all, len(due) > 0); err != nil && ctx.Err() == nil {
				w.s.Logger.Warn("drift check failed", "app", appID, "error", err)
				w.mu.Lock()
				delete(w.drifted, appID) // check again on the next tick, not a whole DriftEvery later
				w.mu.Unlock()
			}
		}
	})
}

// claimed runs work under the app's switch claim. While another instance
// holds it, it tries again until the holder finishes (and this finds
// nothing left to do) or its claim lapses, for at most ApplyTimeout
// (lease.Locker.AcquireWithin). work's context ends if the claim is lost.
func (w *switcher) claimed(ctx context.Context, appID string, work func(context.Context, lease.Fence)) {
	le, err := w.s.Claims.AcquireWithin(ctx, SwitchClaim(appID), w.s.ApplyTimeout)
	if err != nil {
		if !errors.Is(err, lease.ErrHeld) && ctx.Err() == nil {
			w.s.Logger.Warn("could not claim an app's switch; the next tick tries again", "app", appID, "error", err)
		}
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(le.Context(), cancel)
	work(wctx, le.Fence())
	stop()
	cancel()
	rctx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if err := le.Release(rctx); err != nil {
		w.s.Logger.Warn("could not release an app's switch claim; it will lapse", "app", appID, "error", err)
	}
	done()
}

// apply switches one app's lagging triggers in one call and records the
// outcome on each circuit. Circuits in shadow mode are recorded as applied
// without a switch: their trigger stays as it is.
func (w *switcher) apply(ctx context.Context, f lease.Fence, app App, due, all []Circuit) {
	off := make(map[string]bool, len(due))
	var armed []Circuit
	for _, c := range due {
		if c.Shadow {
			if err := w.store.Circuits.MarkApplied(ctx, f, c, w.s.Clock.Now()); err != nil {
				w.s.Logger.Warn("could not record a shadow circuit's episode", "circuit", c.ID(), "error", err)
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
	started := w.s.Clock.Now()
	var err error
	if tuning(due) {
		due, err = w.tune(ctx, f, app, due, all, off)
	} else {
		callCtx, cancel := context.WithTimeout(ctx, w.s.ApplyTimeout)
		err = w.sw.Apply(callCtx, app, off)
		cancel()
	}
	if ctx.Err() == nil {
		w.mu.Lock()
		w.local.CountApply(app.Switch, err, w.s.Clock.Now().Sub(started))
		w.mu.Unlock()
	}
	if err != nil {
		if ctx.Err() != nil {
			return // the tenure ended; the next holder tries again
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s: %w", w.s.ApplyTimeout, err)
		}
		w.failApply(ctx, f, due, err)
		return
	}
	at := w.s.Clock.Now()
	for _, c := range due {
		if err := w.store.Circuits.MarkApplied(ctx, f, c, at); err != nil {
			// A newer episode is applied on a later tick.
			w.s.Logger.Warn("could not record a switched trigger", "circuit", c.ID(), "error", err)
			continue
		}
		w.mu.Lock()
		if len(w.switchedFrom) >= maxSwitchedFrom {
			clear(w.switchedFrom) // at worst one more read of each
		}
		w.switchedFrom[c.ID()] = seen(c)
		w.mu.Unlock()
		w.s.Logger.Info("trigger switched", "circuit", c.ID(), "trigger", onOff(!c.State.TriggerOff()), "episode", c.Episode)
	}
}

// tune writes the triggers in off and the app's throttle settings in one
// write, recording first what a throttle is about to lower. It returns the
// circuits the write was for: one whose record could not be made is told
// why on its own, and left out of the write.
func (w *switcher) tune(ctx context.Context, f lease.Fence, app App, due, all []Circuit, off map[string]bool) ([]Circuit, error) {
	tu, ok := w.sw.(Tuner)
	if !ok {
		return due, ErrCannotTune
	}
	others := slices.DeleteFunc(slices.Clone(all), func(c Circuit) bool {
		return slices.ContainsFunc(due, func(d Circuit) bool { return d.Function == c.Function })
	})
	kept, left, err := w.record(ctx, f, tu, app, due, others)
	if err != nil {
		return due, err
	}
	for _, c := range due {
		if why, ok := left[c.Function]; ok {
			delete(off, c.Function)
			w.failApply(ctx, f, []Circuit{c}, why)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	callCtx, cancel := context.WithTimeout(ctx, w.s.ApplyTimeout)
	defer cancel()
	return kept, tu.Tune(callCtx, app, off, tuned(slices.Concat(others, kept)))
}

// failApply records why the triggers could not be set and when to try
// again, doubling the wait each time up to RetryMax.
func (w *switcher) failApply(ctx context.Context, f lease.Fence, due []Circuit, cause error) {
	now := w.s.Clock.Now()
	for _, c := range due {
		attempts := c.ApplyAttempts + 1
		wait := min(w.s.RetryFirst<<min(attempts-1, 20), w.s.RetryMax)
		problem := fmt.Sprintf("could not switch the trigger %s: %v", onOff(!c.State.TriggerOff()), cause)
		if err := w.store.Circuits.SetApplyError(ctx, f, c, problem, attempts, now.Add(wait)); err != nil {
			w.s.Logger.Warn("could not record a failed switch", "circuit", c.ID(), "error", err)
		}
		w.s.Logger.Warn("trigger not switched", "circuit", c.ID(), "attempt", attempts, "retry_in", wait.String(), "error", cause)
	}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// checkDrift reads the app's actual settings and records circuits whose
// trigger was moved by someone else after Fusebox applied it, and hands
// back the throttle settings someone changed by hand (not right after
// this pass wrote: circuits is then what the tick read before the write).
func (w *switcher) checkDrift(ctx context.Context, f lease.Fence, app App, circuits []Circuit, wrote bool) error {
	callCtx, cancel := context.WithTimeout(ctx, w.s.ApplyTimeout)
	disabled, err := w.sw.Disabled(callCtx, app)
	cancel()
	if err != nil {
		return fmt.Errorf("app %s: read trigger settings: %w", app.ID, err)
	}
	var errs []error
	now := w.s.Clock.Now()
	for _, c := range circuits {
		if c.Pending() || c.Shadow {
			continue // not applied yet, or never switched: not drift
		}
		drift := DriftOf(c, disabled[c.Function])
		if drift == c.Drift {
			continue
		}
		if err := w.store.Circuits.SetDrift(ctx, f, c, drift, now); err != nil {
			errs = append(errs, err)
		}
	}
	if tu, ok := w.sw.(Tuner); ok && !wrote {
		errs = append(errs, w.releaseHandChanged(ctx, f, tu, app, circuits))
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
