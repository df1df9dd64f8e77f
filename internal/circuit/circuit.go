// Package circuit is Fusebox's domain model of circuit breakers: a circuit
// watches one function of one function app and, when failures cross its
// threshold within its window, opens by switching the function's trigger off.
//
// The package knows nothing of HTTP, templates or Azure SDK types: state
// changes are pure functions of (circuit, counts, now) in transition.go, and
// the evaluator reaches storage and trigger switches through the small
// interfaces it declares.
package circuit

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/spoken"
)

// State is where a circuit stands.
type State int

const (
	// Closed: the function runs; failures are counted.
	Closed State = iota
	// Open: the threshold was crossed and the trigger is off.
	Open
	// HalfOpen: the trigger is back on for a trial after a cooldown.
	HalfOpen
	// ForcedOpen: an operator switched the trigger off by hand.
	ForcedOpen
	// Throttled: the function runs with its app's concurrency lowered (a
	// share of what it ran with, ThrottleStage), because its throttle rule
	// fired or it is ramping back up after a resume.
	Throttled
)

var stateNames = [...]string{"closed", "open", "half-open", "forced-open", "throttled"}

// States are every state, in the order pages list them.
var States = []State{Closed, Throttled, Open, HalfOpen, ForcedOpen}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("state(%d)", int(s))
	}
	return stateNames[s]
}

// ParseState reads the name String gives. Rows written by other programs
// are checked with it, so an unknown name is an error, not "closed".
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("circuit: unknown state %q", name)
}

// TriggerOff reports whether the state means the function must not run.
func (s State) TriggerOff() bool { return s == Open || s == ForcedOpen }

// Policy says how an open circuit closes again.
type Policy struct {
	// AutoResume opts in to automatic recovery: after Cooldown the trigger
	// is switched back on for a trial (half-open). Off by default: a person
	// resumes once the cause is fixed.
	AutoResume bool
	Cooldown   time.Duration
	// MaxCooldown caps the cooldown, which doubles with each consecutive
	// trip (switching a trigger restarts the app: flapping is expensive).
	// Zero means 16 × Cooldown.
	MaxCooldown time.Duration
}

// CooldownFor is the cooldown after the streak-th consecutive trip:
// Cooldown × 2^(streak−1), capped by MaxCooldown, and spread by up to
// ±10 % by jitter in [-1, 1], so circuits that tripped together do not all
// try again at the same moment.
func (p Policy) CooldownFor(streak int, jitter float64) time.Duration {
	capped := p.MaxCooldown
	if capped <= 0 {
		capped = 16 * p.Cooldown
	}
	d := p.Cooldown
	for i := 1; i < streak && d < capped; i++ {
		d *= 2
	}
	d = min(d, capped)
	return d + time.Duration(float64(d)*0.1*max(-1, min(1, jitter)))
}

// Rule is how a closed circuit decides to trip. The zero Rule is the count
// rule: more than Threshold failures in the window. With Ratio set, the
// circuit trips instead when failures make up at least Ratio of the calls
// (failures and successes) in the window, once at least MinCalls calls
// happened there: a count means different things at 10 calls a second and
// at 5,000.
//
// NoSuccess adds a rule to either: trip when calls fail and none succeeds
// for a whole window. It catches a function that fails every call at a
// rate too low for the count or the ratio's minimum (a timer, a trickle of
// messages). It needs writers that report successes: without them every
// failure looks like a window without a success.
type Rule struct {
	Ratio     float64 // in (0, 1]; 0 for the count rule
	MinCalls  int     // at least 1 when Ratio is set
	NoSuccess bool
	// MinInstances is a quorum: the circuit trips only on failures from at
	// least this many distinct instances in the window; 0 or 1: none.
	MinInstances int
}

// Circuit guards one function.
type Circuit struct {
	AppID    string
	Function string
	// Settings are what the operator sets; the rest is the breaker's
	// state and the switch's bookkeeping.
	Settings

	State   State
	Episode int64 // bumped on every transition
	// Streak counts the evaluator's consecutive trips: it grows with each
	// trip that comes within a window of the circuit closing (or from a
	// failed trial), and starts again at 1 after a whole healthy window.
	Streak    int
	ChangedAt time.Time
	Reason    string // why it last changed
	// Held says the last change was a trip the app's guardrail held: the
	// circuit stays closed, the flip log and the alert say what it would
	// have done.
	Held bool
	// PauseUntil is when a pause (a trip by hand for a time) ends and the
	// evaluator resumes the circuit; zero: no pause, a person resumes.
	PauseUntil time.Time
	// Downstream marks an episode a downstream started ("name#episode",
	// see package downstream): the downstream tells people once for all
	// its members, so the circuit's own notices give way. The evaluator's
	// flips keep it while the episode runs (a trial closing or failing);
	// a person's flip, or the next trip on the circuit's own counts,
	// clears it.
	Downstream string
	// RecentChanges are the times of the last changes (at most
	// keptChanges), oldest first: a circuit that changes too often is
	// flapping, and its alerts become a summary an hour.
	RecentChanges []time.Time
	// ThrottleStage is, while Throttled, the step of the ramp it holds:
	// 0 the lowest share, each step up a larger one (see ThrottleShare).
	ThrottleStage int
	// ThrottleSince is the episode the current throttle began with (kept
	// by the close that ends it, so its notices know what closed); zero
	// when none. Ramping says it began with a resume: a ramp back up
	// after a trip, rather than a throttle of a running function.
	ThrottleSince int64
	Ramping       bool
	// Asked says the last change was a throttle asked about (Throttle.Ask):
	// the circuit stays closed until someone applies it by its link.
	Asked bool
	// Released says which settings the throttle handed back: someone
	// changed them by hand while it held them, so it leaves them as they
	// were set, and neither steps nor puts them back. Cleared when a new
	// throttle begins.
	Released string
	// AckedEpisode is the episode someone acknowledged (AckedBy, at
	// AckedAt): its reminders stop.
	AckedEpisode int64
	AckedBy      string
	AckedAt      time.Time

	// Actuation is what the switch did about the state: kept apart from
	// it, so switching and verifying never change the version a
	// transition is decided on.
	Actuation

	// Incarnation tells this circuit apart from an earlier one for the same
	// function that was deleted: episodes restart at a re-creation, so a
	// link names both. Empty for circuits made before it existed.
	Incarnation string

	// Version is the stored row's version; writes are conditional on it.
	Version string
}

// Actuation is the switch's record of a circuit: which episode's trigger
// setting it applied, why it could not, what the host confirmed and what
// someone moved by hand since. Storage keeps it as its own entity beside
// the circuit, with its own Version.
type Actuation struct {
	// Lowered are the app settings a throttle changed, as they were before
	// it (nil: the setting was absent), so that what is restored is exactly
	// what was there; nil while nothing is lowered. LoweredKind is the
	// trigger kind they were read for. Written by the throttle's switch
	// beside the trigger's, never by a transition.
	Lowered     map[string]*string
	LoweredKind string
	// AppliedEpisode is the episode whose trigger setting a switch last
	// applied, at AppliedAt. While it lags Episode, the evaluator has work
	// to do. A half-open trial and a cooldown run from AppliedAt: only then
	// did the trigger actually move.
	AppliedEpisode int64
	AppliedAt      time.Time
	// ApplyError says why the switch could not set the trigger for this
	// episode, for people; ApplyRetryAt is when it tries again, after
	// ApplyAttempts failed tries. All zero once applied.
	ApplyError    string
	ApplyRetryAt  time.Time
	ApplyAttempts int
	// Confirmation is what the host reported about the trigger of
	// ConfirmedEpisode, at ConfirmedAt (see ConfirmationOf).
	Confirmation     Confirmation
	ConfirmedEpisode int64
	ConfirmedAt      time.Time
	// Drift describes a trigger found in the other position than the
	// circuit wants after it was applied (someone used the portal); empty
	// when there is none.
	Drift      string
	DriftSince time.Time

	// Version is the stored actuation's version ("" when none is stored):
	// the switch's writes are conditional on it, never on the circuit's.
	Version string
}

// ID identifies the circuit across the product: app and function.
func (c Circuit) ID() string { return c.AppID + "/" + c.Function }

// Pending reports whether the trigger has yet to be set for this episode.
func (c Circuit) Pending() bool { return c.AppliedEpisode != c.Episode }

// jitter is a fraction in [-1, 1] fixed by the circuit and the episode:
// the same on every instance and every tick, different between circuits.
func (c Circuit) jitter() float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%d", c.Incarnation, c.ID(), c.Episode)
	return float64(h.Sum64()%2001)/1000 - 1
}

// Cooldown is how long this open episode waits before its trial.
func (c Circuit) Cooldown() time.Duration {
	return c.Policy.CooldownFor(max(c.Streak, 1), c.jitter())
}

// TrialAt is when an open circuit with AutoResume turns half-open; zero
// when it does not, or while its trigger is not yet off.
func (c Circuit) TrialAt() time.Time {
	if c.State != Open || !c.Policy.AutoResume || c.Pending() {
		return time.Time{}
	}
	return c.SwitchedAt().Add(c.Cooldown())
}

// keptChanges is how many change times a circuit keeps: enough to tell
// any flap limit up to it.
const keptChanges = 32

// ChangesSince counts the circuit's changes after t.
func (c Circuit) ChangesSince(t time.Time) int {
	n := 0
	for _, at := range c.RecentChanges {
		if at.After(t) {
			n++
		}
	}
	return n
}

// Stuck reports whether the switch has failed to set the trigger for this
// episode: the circuit page says why, and an operator may delete it.
func (c Circuit) Stuck() bool { return c.Pending() && c.ApplyError != "" }

// CountsFrom is where the failures that count toward the circuit's next
// decision begin: failures in seconds after it are counted, up to now.
//
// A closed circuit counts its window, but never across its last change:
// the failures that opened it are still in the window when a person
// resumes it, and must not open it again. A half-open trial counts from
// the moment the trigger was switched back on. Open circuits count their
// window, for the pages.
func (c Circuit) CountsFrom(now time.Time) time.Time {
	from := now.Add(-c.Window)
	switch c.State {
	case Closed:
		if c.ChangedAt.After(from) {
			from = c.ChangedAt
		}
	case HalfOpen:
		if c.Pending() {
			return now // the trial has not begun
		}
		if at := c.SwitchedAt(); at.After(from) {
			from = at
		}
	case Throttled:
		// A stage is judged on what happened since its settings were
		// written: the failures that caused it are behind it.
		if at := c.SwitchedAt(); at.After(from) {
			from = at
		}
	}
	return from
}

// SwitchedAt is when the trigger was set for the applied episode. Rows
// written before Fusebox recorded it have none; for them the decision's
// time is the best there is.
func (c Circuit) SwitchedAt() time.Time {
	if c.AppliedAt.IsZero() {
		return c.ChangedAt
	}
	return c.AppliedAt
}

// RuleText says the circuit's trip rule in words, as the form previews it.
func (c Circuit) RuleText() string {
	text := fmt.Sprintf("more than %d failures in %s", c.Threshold, spoken.Duration(c.Window))
	if c.Rule.Ratio > 0 {
		text = fmt.Sprintf("%s of calls fail within %s, once %d calls happened in it", percent(c.Rule.Ratio), spoken.Duration(c.Window), c.Rule.MinCalls)
	}
	if c.Rule.NoSuccess {
		text += fmt.Sprintf(", or when calls fail and none succeeds for a whole %s", spoken.Duration(c.Window))
	}
	if c.Rule.MinInstances > 1 {
		text += fmt.Sprintf(", from at least %d instances", c.Rule.MinInstances)
	}
	return text
}

// percent prints 0.5 as "50 %" and 0.1256 as "12.5 %": to a tenth of a
// percent, rounded down (the epsilon absorbs binary fractions such as
// 0.55 × 1000 = 550.0000000000001).
func percent(r float64) string {
	return strconv.FormatFloat(math.Floor(r*1000+1e-6)/10, 'f', -1, 64) + " %"
}

// HubRef names the event hub a function consumes; an empty Namespace or
// Group matches any.
type HubRef struct{ Namespace, Hub, Group string }

// Consumes parses EventHub: "orders", "orders/$default", or, where one
// storage account holds checkpoints of hubs of the same name in several
// namespaces, "orders-prod.servicebus.windows.net/orders/$default".
func (c Circuit) Consumes() HubRef {
	parts := strings.Split(c.EventHub, "/")
	switch len(parts) {
	case 3:
		return HubRef{parts[0], parts[1], parts[2]}
	case 2:
		return HubRef{Hub: parts[0], Group: parts[1]}
	}
	return HubRef{Hub: c.EventHub}
}

// Matches reports whether a checkpoint of namespace/hub/group is this
// hub's; names compare without case, as the host lower-cases them.
func (r HubRef) Matches(namespace, hub, group string) bool {
	return strings.EqualFold(r.Hub, hub) && (r.Group == "" || strings.EqualFold(r.Group, group)) &&
		(r.Namespace == "" || strings.EqualFold(r.Namespace, namespace))
}

// SetAsideOwners says, from the app's circuits, which function's work each
// of its parking queues and poison queues holds.
func SetAsideOwners(appID string, cs []Circuit) setaside.Owners {
	o := setaside.Owners{Parking: map[string]string{}, Triggers: map[string]string{}}
	for _, c := range cs {
		if c.AppID != appID {
			continue
		}
		if c.Parking != "" {
			o.Parking[c.Parking] = c.Function
		}
		if c.Queue != "" {
			o.Triggers[c.Queue] = c.Function
		}
	}
	return o
}
