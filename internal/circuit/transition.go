package circuit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/throttle"
)

// Counts are the failures the evaluator saw for one circuit.
type Counts struct {
	// Window is every failure in (now-Window, now], for charts and pages.
	Window int
	// Counted is the number in (Since, now]: the failures that count toward
	// the circuit's next decision (see Circuit.CountsFrom).
	Counted int
	// Throttling are the counted failures whose error looked like a
	// downstream pushing back.
	Throttling int
	// Successes are the successes reported in (Since, now]: with Counted,
	// the calls a ratio rule weighs. Zero for writers that report none.
	Successes int
	Since     time.Time
	// Whole says that (Since, now] is the whole window: the circuit has
	// not changed within it.
	Whole bool
	// TraceParent is that of the newest counted failure row that has one:
	// the report a trip is traced back to.
	TraceParent string
	newest      time.Time
	// Instances are the distinct instances (named sources) that reported
	// counted failures; counted only for a circuit with a quorum, and only
	// up to it.
	Instances int
	// HiddenSuccesses are the counted failures from Executed records of a
	// function whose records have shown no success (FailedRecords). With
	// no success counted beside them, the calls are unknown: no ratio and
	// no "no success" rule is judged on them.
	HiddenSuccesses int
}

// SuccessesUnknown says that the counts cannot tell how many calls there
// were: failures from records that hide successes, and no success.
func (n Counts) SuccessesUnknown() bool { return n.HiddenSuccesses > 0 && n.Successes == 0 }

// Flip is one entry of a circuit's flip log: a transition, who made it and why.
type Flip struct {
	Episode   int64 // the episode the transition started
	From, To  State
	At        time.Time
	Actor     string // "evaluator", an operator's name, "resume link: ops@example.com"
	Count     int    // failures counted when it happened...
	Calls     int    // ...of this many calls (failures and successes), for ratio rules
	Since     time.Time
	Threshold int // ...in (Since, At], against the rule of the time
	Window    time.Duration
	Reason    string
	// TraceParent links the flip to the trace of the failure report that
	// caused it (trips by the evaluator), or of the request that made it.
	TraceParent string
}

// Actor of transitions the evaluator makes.
const EvaluatorActor = "evaluator"

// Evaluate is the evaluator's decision for one tick. It returns the circuit
// unchanged and a nil flip when nothing happens.
//
//   - closed trips to open when more than Threshold failures are counted:
//     those in its window since it last changed;
//   - open, with AutoResume, turns half-open once Cooldown has passed since
//     the trigger went off;
//   - half-open trips again at the first failure after the trigger went
//     back on, and closes after a whole window without one;
//   - forced-open changes only by an operator's hand, or when its pause
//     ends: then it resumes as a person's resume would;
//   - closed, with a throttle stage, throttles when its throttle rule fires
//     and the trip rule does not; throttled trips, steps down or steps up
//     as evaluateThrottled says.
//
// Open and half-open wait while their trigger is not yet switched: a
// cooldown or trial that started before the switch would be shorter than
// promised.
func Evaluate(c Circuit, n Counts, now time.Time) (Circuit, *Flip) {
	switch c.State {
	case Closed:
		if p, end, ok := PauseDue(c, now); ok {
			next, f, err := Pause(c, PauseWindowActor, "pause window "+p.String(), end, n, now)
			if err == nil {
				return next, &f
			}
		}
		if Trips(c, n) {
			// A trip within a window of closing continues the streak.
			streak := 1
			if now.Sub(c.ChangedAt) < c.Window && c.Streak > 0 {
				streak = c.Streak + 1
			}
			next, f := flip(c, Open, EvaluatorActor, n, now, tripReason(c, n, now))
			next.Streak = streak
			return next, f
		}
		if throttles(c, n) && c.Throttle.Ask {
			if c.Asked && now.Sub(c.ChangedAt) < AskAgainAfter {
				break // the question stands
			}
			next, f := flip(c, Closed, EvaluatorActor, n, now, fmt.Sprintf("%s: asking to lower concurrency to %s (apply from the notice's link)", throttleCount(c, n, now), shareWords(throttle.Ramp[0])))
			next.Asked = true
			return next, f
		}
		if throttles(c, n) {
			next, f := flip(c, Throttled, EvaluatorActor, n, now, fmt.Sprintf("%s: concurrency lowered to %s of what it was", throttleCount(c, n, now), shareWords(throttle.Ramp[0])))
			next.ThrottleStage = 0
			return next, f
		}
	case Throttled:
		return evaluateThrottled(c, n, now)
	case ForcedOpen:
		if !c.PauseUntil.IsZero() && !now.Before(c.PauseUntil) && !c.Pending() {
			next, f, err := Resume(c, EvaluatorActor, "the pause ended", n, now)
			if err == nil {
				return next, &f
			}
		}
	case Open:
		// With a probe, the trial waits for its good answers: the
		// downstream keeper probes and starts it (ProbeTries).
		if at := c.TrialAt(); !at.IsZero() && !now.Before(at) && c.Probe.URL == "" {
			reason := fmt.Sprintf("cooldown of %s over: trigger on for a trial", spoken.Duration(c.Cooldown().Round(time.Second)))
			if c.Streak > 1 {
				reason = fmt.Sprintf("cooldown of %s over (trip %d in a row): trigger on for a trial", spoken.Duration(c.Cooldown().Round(time.Second)), c.Streak)
			}
			return flip(c, HalfOpen, EvaluatorActor, n, now, reason)
		}
	case HalfOpen:
		if c.Pending() {
			break
		}
		trialOver := !now.Before(c.SwitchedAt().Add(c.Window))
		if c.Rule.Ratio > 0 {
			// A ratio rule judges the trial by its calls: it fails when the
			// rule fires, and passes only after a whole window with enough
			// calls under it.
			calls := n.Counted + n.Successes
			switch {
			case Trips(c, n):
				next, f := flip(c, Open, EvaluatorActor, n, now, "the trial failed: "+tripReason(c, n, now))
				next.Streak = c.Streak + 1
				return next, f
			case trialOver && calls >= c.Rule.MinCalls && !n.SuccessesUnknown():
				return flip(c, Closed, EvaluatorActor, n, now,
					fmt.Sprintf("%d of %d calls failed in a whole window (%s) after the trigger went on, under the rule: recovered", n.Counted, calls, spoken.Duration(c.Window)))
			}
			break
		}
		if n.Counted > 0 {
			next, f := flip(c, Open, EvaluatorActor, n, now,
				fmt.Sprintf("failures resumed during the trial (%d since the trigger went on at %s)", n.Counted, clockTime(c.SwitchedAt())))
			next.Streak = c.Streak + 1
			return next, f
		}
		if trialOver {
			return flip(c, Closed, EvaluatorActor, n, now,
				fmt.Sprintf("no failure for a whole window (%s) after the trigger went on: recovered", spoken.Duration(c.Window)))
		}
	}
	return c, nil
}

// CouldChange reports whether counts n would move circuit c if it were
// evaluated now. The ingest path asks it, with the counts the last tick
// read plus what was reported since, to decide whether a tick is worth
// running at once.
func CouldChange(c Circuit, n Counts, now time.Time) bool {
	_, fl := Evaluate(c, n, now)
	return fl != nil
}

// Trips reports whether the counts break the closed circuit's rule. A ratio
// rule never trips below its minimum of calls: with three calls, one
// failure is a third of them and means nothing.
func Trips(c Circuit, n Counts) bool {
	if c.Rule.MinInstances > 1 && n.Instances < c.Rule.MinInstances {
		return false // one sick instance does not stop every instance's work
	}
	if starved(c, n) {
		return true
	}
	if c.Rule.Ratio > 0 {
		if n.SuccessesUnknown() {
			return false // 10 % failures would read as 100 %
		}
		calls := n.Counted + n.Successes
		return calls >= c.Rule.MinCalls && calls > 0 && float64(n.Counted) >= c.Rule.Ratio*float64(calls)
	}
	return n.Counted > c.Threshold
}

// tripsOnItsMainRule is Trips without the NoSuccess rule.
func tripsOnItsMainRule(c Circuit, n Counts) bool {
	c.Rule.NoSuccess = false
	return Trips(c, n)
}

// starved reports whether the NoSuccess rule fires: calls failed and none
// succeeded over a whole window. A part of a window (just after a resume)
// proves nothing yet.
func starved(c Circuit, n Counts) bool {
	return c.Rule.NoSuccess && n.Whole && n.Counted > 0 && n.Successes == 0 && !n.SuccessesUnknown()
}

// tripReason says what a trip counted, and from when when the count did not
// cover the whole window.
func tripReason(c Circuit, n Counts, now time.Time) string {
	if starved(c, n) && !tripsOnItsMainRule(c, n) {
		return fmt.Sprintf("%d failures and no successful call in %s (rule: no success for a whole window)", n.Counted, spoken.Duration(c.Window))
	}
	if c.Rule.Ratio > 0 {
		calls := n.Counted + n.Successes
		span := "in " + spoken.Duration(c.Window)
		if n.Since.After(now.Add(-c.Window)) {
			span = "since " + clockTime(n.Since)
		}
		return fmt.Sprintf("%s of %s calls failed %s (rule: ≥ %s once %s calls)%s", percent(float64(n.Counted)/float64(calls)),
			thousands(calls), span, percent(c.Rule.Ratio), thousands(c.Rule.MinCalls), quorumWords(c, n))
	}
	if n.Since.After(now.Add(-c.Window)) {
		return fmt.Sprintf("%d failures since %s, within %s (threshold %d)%s", n.Counted, clockTime(n.Since), spoken.Duration(c.Window), c.Threshold, quorumWords(c, n))
	}
	return fmt.Sprintf("%d failures in %s (threshold %d)%s", n.Counted, spoken.Duration(c.Window), c.Threshold, quorumWords(c, n))
}

// quorumWords say, for a circuit with a quorum, from how many instances.
func quorumWords(c Circuit, n Counts) string {
	if c.Rule.MinInstances <= 1 {
		return ""
	}
	return fmt.Sprintf(" from %d instances (quorum %d)", n.Instances, c.Rule.MinInstances)
}

func clockTime(t time.Time) string { return t.UTC().Format("15:04:05 MST") }

// thousands prints 1840 as "1,840".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Errors of operator actions.
var (
	ErrAlreadyOpen = errors.New("circuit: the trigger is already off by hand")
	ErrNotOpen     = errors.New("circuit: the circuit is closed; there is nothing to resume")
)

// Trip is an operator switching the trigger off by hand. The circuit stays
// forced-open until someone resumes it.
func Trip(c Circuit, actor, reason string, n Counts, now time.Time) (Circuit, Flip, error) {
	if c.State == ForcedOpen {
		return c, Flip{}, ErrAlreadyOpen
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = "tripped by hand"
	}
	next, f := flip(c, ForcedOpen, actor, n, now, reason)
	return next, *f, nil
}

// MaxPause bounds a pause: longer is a trip a person resumes.
const MaxPause = 7 * 24 * time.Hour

// ErrPause is a pause that does not end in the future within MaxPause.
var ErrPause = errors.New("circuit: a pause ends after now and within 7 days")

// Pause is an operator switching the trigger off until a time: a trip by
// hand that the evaluator resumes when it ends (through the throttle's
// ramp, when the circuit has one). It may be resumed early by hand.
func Pause(c Circuit, actor, reason string, until time.Time, n Counts, now time.Time) (Circuit, Flip, error) {
	if !until.After(now) || until.Sub(now) > MaxPause {
		return c, Flip{}, ErrPause
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = "paused by hand"
	}
	next, f, err := Trip(c, actor, fmt.Sprintf("%s, until %s", reason, until.UTC().Format("2006-01-02 15:04 MST")), n, now)
	if err != nil {
		return c, Flip{}, err
	}
	next.PauseUntil = until
	return next, f, nil
}

// Resume switches the trigger back on and closes the circuit. The function
// continues from its last checkpoint. A circuit with a throttle stage
// comes back throttled, at the ramp's lowest share, so a backlog does not
// meet a store that has just recovered at full concurrency; resuming a
// throttled circuit restores its concurrency at once.
func Resume(c Circuit, actor, reason string, n Counts, now time.Time) (Circuit, Flip, error) {
	if c.State == Closed {
		return c, Flip{}, ErrNotOpen
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = "resumed by " + actor
	}
	if c.Throttles() && c.State.TriggerOff() || c.Throttles() && c.State == HalfOpen {
		next, f := flip(c, Throttled, actor, n, now, fmt.Sprintf("%s; concurrency ramps back up from %s", reason, shareWords(throttle.Ramp[0])))
		next.ThrottleStage, next.Ramping = 0, true
		return next, *f, nil
	}
	next, f := flip(c, Closed, actor, n, now, reason)
	return next, *f, nil
}

// ErrNoTrial is a trial asked of a circuit whose trigger is not off.
var ErrNoTrial = errors.New("circuit: the trigger is not off; there is nothing to try")

// Trial switches the trigger back on for a trial, as a cooldown's end
// does: the circuit is half-open, and its own counts decide, over a
// window, whether it closes or opens again. An outside signal that the
// cause cleared (an alert resolved) asks for one; it never resumes.
func Trial(c Circuit, actor, reason string, n Counts, now time.Time) (Circuit, Flip, error) {
	if !c.State.TriggerOff() {
		return c, Flip{}, ErrNoTrial
	}
	next, f := flip(c, HalfOpen, actor, n, now, reason)
	return next, *f, nil
}

// ErrNotAsked is an Apply link for a throttle nobody is asked about now.
var ErrNotAsked = errors.New("circuit: no throttle is waiting to be applied")

// ErrNoThrottle is a throttle asked of a circuit that has none, or is
// not running.
var ErrNoThrottle = errors.New("circuit: it has no throttle stage, or is not closed")

// ThrottleNow lowers a running circuit's concurrency to its throttle's
// first stage on an alert's word (or a downstream's); the throttle's own
// ramp steps it back up as its counts stay healthy, and trips it if they
// do not.
func ThrottleNow(c Circuit, actor, reason string, n Counts, now time.Time) (Circuit, Flip, error) {
	if c.State != Closed || !c.Throttles() {
		return c, Flip{}, ErrNoThrottle
	}
	next, f := flip(c, Throttled, actor, n, now, fmt.Sprintf("%s: concurrency lowered to %s of what it was", reason, shareWords(throttle.Ramp[0])))
	next.ThrottleStage = 0
	return next, *f, nil
}

// ApplyThrottle is a person applying the throttle a circuit asked about:
// it lowers the app's concurrency as the throttle stage does on its own.
func ApplyThrottle(c Circuit, actor string, n Counts, now time.Time) (Circuit, Flip, error) {
	if c.State != Closed || !c.Asked || !c.Throttles() {
		return c, Flip{}, ErrNotAsked
	}
	next, f := flip(c, Throttled, actor, n, now, fmt.Sprintf("throttle applied by %s: concurrency lowered to %s of what it was", actor, shareWords(throttle.Ramp[0])))
	next.ThrottleStage = 0
	return next, *f, nil
}

// Hold is the evaluator's answer to a trip the app's guardrail does not
// allow: an episode in which the circuit stays as it was, logged and
// alerted as the trip it would have been. Counting starts again from it,
// so the same failures are not held again every tick.
func Hold(c Circuit, trip Flip, off, limit int) (Circuit, Flip) {
	reason := fmt.Sprintf("held by guardrail (%d of the app's circuits already off, at most %d): would have tripped: %s", off, limit, trip.Reason)
	next, f := flip(c, c.State, EvaluatorActor, Counts{Counted: trip.Count, Successes: trip.Calls - trip.Count, Since: trip.Since, TraceParent: trip.TraceParent}, trip.At, reason)
	next.Held = true
	return next, *f
}

func flip(c Circuit, to State, actor string, n Counts, now time.Time, reason string) (Circuit, *Flip) {
	if c.Shadow && actor == EvaluatorActor {
		reason = "shadow mode, trigger left as it is: " + reason
	}
	f := &Flip{Episode: c.Episode + 1, From: c.State, To: to, At: now, Actor: actor,
		Count: n.Counted, Calls: n.Counted + n.Successes, Since: n.Since, Threshold: c.Threshold, Window: c.Window, Reason: reason, TraceParent: n.TraceParent}
	switch {
	case to == Throttled && c.State != Throttled:
		c.ThrottleSince, c.Ramping, c.Released = c.Episode+1, false, ""
	case to == Throttled, to == Closed && c.State == Throttled:
		// a step, or the close that ends the throttle: it stays known
	default:
		c.ThrottleSince, c.Ramping = 0, false
	}
	c.State, c.Episode, c.ChangedAt, c.Reason = to, c.Episode+1, now, reason
	c.Drift, c.DriftSince = "", time.Time{}
	c.ApplyError, c.ApplyRetryAt, c.ApplyAttempts = "", time.Time{}, 0
	c.Held, c.Asked, c.PauseUntil = false, false, time.Time{}
	if actor != EvaluatorActor || f.From == Closed {
		c.Downstream = "" // a person's flip, or a trip on the circuit's own counts
	}
	if to != Throttled {
		c.ThrottleStage = 0
	}
	c.RecentChanges = append(c.RecentChanges[max(0, len(c.RecentChanges)-keptChanges+1):len(c.RecentChanges):len(c.RecentChanges)], now)
	return c, f
}
