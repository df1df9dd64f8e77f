package circuit

import (
	"context"
	"fmt"
	"time"
)

// Verb is what a flip by hand, by a downstream or by an alert does to a
// circuit's switch.
type Verb int

const (
	// VerbTrip switches the trigger off; with Action.Until, until then
	// (a pause, which the evaluator ends).
	VerbTrip Verb = iota + 1
	// VerbTrial switches it on for a trial its counts judge.
	VerbTrial
	// VerbResume switches it back on.
	VerbResume
	// VerbThrottle lowers what the trigger takes at once (its throttle).
	VerbThrottle
)

// Action is one verb and its options.
type Action struct {
	Verb Verb
	// Until ends a trip: a pause.
	Until time.Time
	// Mark is the downstream episode ("name#episode") a flip is made on
	// behalf of (Circuit.Downstream); empty: the circuit's own.
	Mark string
}

// Trip, Pause, Trial, Resume and Throttle are the actions by hand.
var (
	Tripping   = Action{Verb: VerbTrip}
	Trying     = Action{Verb: VerbTrial}
	Resuming   = Action{Verb: VerbResume}
	Throttling = Action{Verb: VerbThrottle}
)

// PauseUntil is a trip that ends at until.
func PauseUntil(until time.Time) Action { return Action{Verb: VerbTrip, Until: until} }

// For is a on behalf of a downstream's episode mark.
func (a Action) For(mark string) Action { a.Mark = mark; return a }

// past is the action as the flip log says it was done.
func (a Action) past() string {
	switch {
	case a.Verb == VerbTrip && !a.Until.IsZero():
		return "paused"
	case a.Verb == VerbTrip:
		return "tripped"
	case a.Verb == VerbTrial:
		return "tried"
	case a.Verb == VerbResume:
		return "resumed"
	case a.Verb == VerbThrottle:
		return "throttled"
	}
	return fmt.Sprintf("verb %d", a.Verb)
}

// Flip does a to a circuit's switch: as actor, for reason, on the
// circuit as it is now (the write is conditional; a lost race is tried
// again on the circuit as it has become).
func (s *Service) Flip(ctx context.Context, appID, function, actor, reason string, a Action) (Circuit, error) {
	change := func(c Circuit, n Counts, now time.Time) (Circuit, Flip, error) {
		var (
			next Circuit
			f    Flip
			err  error
		)
		switch {
		case a.Verb == VerbTrip && !a.Until.IsZero():
			next, f, err = Pause(c, actor, reason, a.Until, n, now)
		case a.Verb == VerbTrip:
			next, f, err = Trip(c, actor, reason, n, now)
		case a.Verb == VerbTrial:
			next, f, err = Trial(c, actor, reason, n, now)
		case a.Verb == VerbResume:
			next, f, err = Resume(c, actor, reason, n, now)
		case a.Verb == VerbThrottle:
			next, f, err = ThrottleNow(c, actor, reason, n, now)
		default:
			return c, Flip{}, fmt.Errorf("circuit: %s is no action", a.past())
		}
		if err == nil && a.Mark != "" {
			next.Downstream = a.Mark
		}
		return next, f, err
	}
	return s.act(ctx, appID, function, actor, a.past(), change)
}
