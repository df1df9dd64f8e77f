package circuit

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Counts are the failures the evaluator saw for one circuit.
type Counts struct {
	// Window is the number of failures in (now-Window, now].
	Window int
	// SinceChange is the number in (ChangedAt, now], capped by the window:
	// what a half-open trial has produced.
	SinceChange int
}

// Flip is one entry of a circuit's flip log: a transition, who made it and why.
type Flip struct {
	Episode   int64 // the episode the transition started
	From, To  State
	At        time.Time
	Actor     string // "evaluator", an operator's name, "resume link: ops@example.com"
	Count     int    // failures in the window when it happened
	Threshold int
	Window    time.Duration
	Reason    string
}

// Actor of transitions the evaluator makes.
const EvaluatorActor = "evaluator"

// Evaluate is the evaluator's decision for one tick. It returns the circuit
// unchanged and a nil flip when nothing happens.
//
//   - closed trips to open when more than Threshold failures fall in the window;
//   - open, with AutoResume, turns half-open once Cooldown has passed;
//   - half-open trips again at the first failure, and closes after a whole
//     window without one;
//   - forced-open changes only by an operator's hand.
func Evaluate(c Circuit, n Counts, now time.Time) (Circuit, *Flip) {
	switch c.State {
	case Closed:
		if n.Window > c.Threshold {
			return flip(c, Open, EvaluatorActor, n.Window, now,
				fmt.Sprintf("%d failures in %s (threshold %d)", n.Window, shortDuration(c.Window), c.Threshold))
		}
	case Open:
		if c.Policy.AutoResume && !now.Before(c.ChangedAt.Add(c.Policy.Cooldown)) {
			return flip(c, HalfOpen, EvaluatorActor, n.Window, now,
				fmt.Sprintf("cooldown of %s over: trigger on for a trial", shortDuration(c.Policy.Cooldown)))
		}
	case HalfOpen:
		if n.SinceChange > 0 {
			return flip(c, Open, EvaluatorActor, n.Window, now,
				fmt.Sprintf("failures resumed during the trial (%d)", n.SinceChange))
		}
		if !now.Before(c.ChangedAt.Add(c.Window)) {
			return flip(c, Closed, EvaluatorActor, n.Window, now,
				fmt.Sprintf("no failure for a whole window (%s): recovered", shortDuration(c.Window)))
		}
	}
	return c, nil
}

// Errors of operator actions.
var (
	ErrAlreadyOpen = errors.New("circuit: the trigger is already off by hand")
	ErrNotOpen     = errors.New("circuit: the circuit is closed; there is nothing to resume")
)

// Trip is an operator switching the trigger off by hand. The circuit stays
// forced-open until someone resumes it.
func Trip(c Circuit, actor, reason string, count int, now time.Time) (Circuit, Flip, error) {
	if c.State == ForcedOpen {
		return c, Flip{}, ErrAlreadyOpen
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = "tripped by hand"
	}
	next, f := flip(c, ForcedOpen, actor, count, now, reason)
	return next, *f, nil
}

// Resume switches the trigger back on and closes the circuit. The function
// continues from its last checkpoint.
func Resume(c Circuit, actor, reason string, count int, now time.Time) (Circuit, Flip, error) {
	if c.State == Closed {
		return c, Flip{}, ErrNotOpen
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = "resumed by " + actor
	}
	next, f := flip(c, Closed, actor, count, now, reason)
	return next, *f, nil
}

func flip(c Circuit, to State, actor string, count int, now time.Time, reason string) (Circuit, *Flip) {
	f := &Flip{Episode: c.Episode + 1, From: c.State, To: to, At: now, Actor: actor,
		Count: count, Threshold: c.Threshold, Window: c.Window, Reason: reason}
	c.State, c.Episode, c.ChangedAt, c.Reason = to, c.Episode+1, now, reason
	c.Drift, c.DriftSince = "", time.Time{}
	return c, f
}

// shortDuration prints 30s, 5m or 1h30m rather than Go's 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ShortDuration is shortDuration for other packages' messages.
func ShortDuration(d time.Duration) string { return shortDuration(d) }
