package circuit

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
)

// Reported is what one stored report added to a circuit's counts.
type Reported struct {
	AppID, Function     string
	Failures, Successes int
}

// CheckReported tells the evaluator of reports this instance has just stored. When
// they, added to what the last tick counted, could change a circuit, it
// checks that circuit at once (check): its row and its window's rows,
// read afresh. A circuit far from its threshold costs nothing: no storage
// read, only this arithmetic.
func (e *Evaluator) CheckReported(reports []Reported) {
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
			e.askForTick() // no loop yet, or a check in flight: the tick decides
			continue
		}
		e.checking[id] = true
		e.checks.Add(1)
		life := e.life
		go func() {
			defer func() {
				e.mu.Lock()
				delete(e.checking, id)
				e.mu.Unlock()
				e.checks.Done()
			}()
			e.check(life, r.AppID, r.Function)
		}()
	}
}

// check decides one circuit now, as a tick would (Decide), from its row
// and its window read afresh: the trip a report causes need not wait for
// the next tick, nor for a whole tick's reads. It leaves to the tick what
// weighs other circuits (an app's guardrail) and anything it cannot read.
func (e *Evaluator) check(ctx context.Context, appID, function string) {
	c, err := e.store.Circuits.Get(ctx, appID, function)
	if err != nil {
		e.s.Logger.Warn("could not read a reported circuit; the next tick decides", "circuit", appID+"/"+function, "error", err)
		e.askForTick()
		return
	}
	now := e.s.Clock.Now()
	rows, err := e.store.Failures.CircuitWindow(ctx, appID, function, now.Add(-c.Window).Truncate(time.Second), now)
	if err != nil {
		e.s.Logger.Warn("could not read a reported circuit's window; the next tick decides", "circuit", c.ID(), "error", err)
		e.askForTick()
		return
	}
	e.mu.Lock()
	app, known := e.apps[appID]
	apps := e.apps
	off, total := 0, 0
	for _, o := range e.current {
		if o.AppID == appID {
			total++
			if o.State.TriggerOff() && !o.Shadow {
				off++
			}
		}
	}
	e.mu.Unlock()
	d := Decide(c, CountRows(rows, []Circuit{c}, now)[c.ID()], now, app.Guardrail, off, total)
	if d.Flip == nil {
		return
	}
	if !known || d.Guarded || d.Held {
		e.askForTick()
		return
	}
	if err := e.store.Circuits.Transition(ctx, lease.Fence{}, d.Next, *d.Flip); err != nil {
		if !errors.Is(err, ErrConflict) {
			e.askForTick()
		}
		return // or another instance, or the tick, made it first
	}
	e.sw.dispatch(e.announce(ctx, d.Next, *d.Flip, "report"), appID, apps, []Circuit{d.Next}, nil, false, now)
	// A tick now, not a second later: on the keeper of the books it counts
	// the trip from the flip log and stores the status the pages read.
	e.askForTick()
}
