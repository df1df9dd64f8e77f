package circuit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/fusebox/fusebox/internal/pushback"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/throttle"
)

// Throttle is a circuit's stage before the trip (opt-in): when more than
// Threshold failures are counted in its window, Fusebox lowers the app's
// concurrency for the function's trigger kind instead of switching the
// trigger off, and trips only if the trip rule still fires after that.
// After a resume, and after a throttle that stayed quiet, concurrency
// returns in steps (throttle.Ramp), each held for Quiet while failures
// stay at or under Threshold.
type Throttle struct {
	Threshold int           // 0: no throttle stage
	Quiet     time.Duration // 0: DefaultThrottleQuiet
	// Kind is the function's trigger kind (throttle.EventHubs,
	// throttle.ServiceBus, throttle.Queue); empty: the circuit's event
	// hub or queue says it.
	Kind string
	// OnlyThrottling counts toward the throttle rule only the failures
	// whose error looks like a downstream pushing back (429, 503,
	// ServerBusy, TooManyRequests...: pushback.Says), as their
	// error text said when reported over HTTP or OpenTelemetry.
	OnlyThrottling bool
	// Words are more words or phrases that say the downstream pushed
	// back, besides the built-in ones ("quota exceeded"): compared by
	// their letters in any case and spacing (pushback.Word), counted with
	// OnlyThrottling.
	Words []string
	// Ask makes the throttle a question: when its rule fires, the
	// circuit's people get a notice with a signed Apply link, and nothing
	// is lowered until one of them applies it (the trip rule still
	// applies meanwhile).
	Ask bool
}

// pushedBackWords says what counts as a downstream pushing back.
func (t Throttle) pushedBackWords() string {
	words := "429, 503, busy"
	for _, w := range t.Words {
		words += ", " + w
	}
	return words
}

// MatchWords are t's words as the throttle compares them (pushback.Word).
func (t Throttle) MatchWords() []string {
	var out []string
	for _, w := range t.Words {
		if m := pushback.Word(w); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// AskAgainAfter is how long an unanswered throttle question stands before
// the rule may ask again.
const AskAgainAfter = time.Hour

// DefaultThrottleQuiet is how long a throttle stage holds under its rule
// before concurrency steps up.
const DefaultThrottleQuiet = 5 * time.Minute

// MaxThrottleQuiet bounds a stage's quiet time.
const MaxThrottleQuiet = 24 * time.Hour

// kindWords name the trigger kinds as people do.
var kindWords = map[string]string{throttle.EventHubs: "Event Hubs", throttle.ServiceBus: "Service Bus", throttle.Queue: "Storage queue", "": "trigger"}

// ThrottleKinds are the trigger kinds a throttle can lower.
var ThrottleKinds = []string{throttle.EventHubs, throttle.ServiceBus, throttle.Queue}

// Throttles says the circuit has a throttle stage.
func (c Circuit) Throttles() bool { return c.Throttle.Threshold > 0 }

// QuietFor is how long each stage holds before the next step up.
func (c Circuit) QuietFor() time.Duration {
	if c.Throttle.Quiet <= 0 {
		return DefaultThrottleQuiet
	}
	return c.Throttle.Quiet
}

// ThrottleKind is the trigger kind whose options a throttle lowers: the
// one set, else an Event Hubs trigger when the circuit names a hub, a
// queue trigger when it names a queue; empty when not known.
func (c Circuit) ThrottleKind() string {
	switch {
	case c.Throttle.Kind != "":
		return c.Throttle.Kind
	case c.EventHub != "":
		return throttle.EventHubs
	case c.Queue != "":
		return throttle.Queue
	}
	return ""
}

// ThrottleShare is the share of the concurrency before the throttle that
// the circuit holds its app at: 0 when it holds none (it runs as before,
// or its trigger is off and the lowered settings wait for the resume).
func (c Circuit) ThrottleShare() float64 {
	if c.State != Throttled {
		return 0
	}
	return throttle.Ramp[min(max(c.ThrottleStage, 0), len(throttle.Ramp)-1)]
}

// throttles reports whether the counts break the throttle rule.
func throttles(c Circuit, n Counts) bool {
	if !c.Throttles() {
		return false
	}
	if c.Rule.MinInstances > 1 && n.Instances < c.Rule.MinInstances {
		return false
	}
	return throttleCounted(c, n) > c.Throttle.Threshold
}

// throttleCounted is what the throttle rule counts.
func throttleCounted(c Circuit, n Counts) int {
	if c.Throttle.OnlyThrottling {
		return n.Throttling
	}
	return n.Counted
}

// evaluateThrottled decides a throttled circuit: trip when the trip rule
// still fires; step back down to the lowest share when the throttle rule
// fires during the ramp; step up (or close, restoring what was there)
// once a stage has held Quiet with failures under the rule.
func evaluateThrottled(c Circuit, n Counts, now time.Time) (Circuit, *Flip) {
	if c.Pending() {
		return c, nil // the stage starts when its settings are written
	}
	switch {
	case Trips(c, n):
		streak := c.Streak + 1
		next, f := flip(c, Open, EvaluatorActor, n, now, "throttling was not enough: "+tripReason(c, n, now))
		next.Streak = streak
		return next, f
	case throttles(c, n) && c.ThrottleStage > 0:
		next, f := flip(c, Throttled, EvaluatorActor, n, now, fmt.Sprintf("failures rose again during the ramp (%s): back to %s of the concurrency before",
			throttleCount(c, n, now), shareWords(throttle.Ramp[0])))
		next.ThrottleStage = 0
		return next, f
	case throttles(c, n):
		return c, nil // held at the lowest share until it is quiet or trips
	case now.Sub(c.SwitchedAt()) < c.QuietFor():
		return c, nil
	case c.ThrottleStage+1 < len(throttle.Ramp):
		share := throttle.Ramp[c.ThrottleStage+1]
		next, f := flip(c, Throttled, EvaluatorActor, n, now, fmt.Sprintf("%d failures in the %s at %s (throttle rule: more than %d): up to %s of the concurrency before",
			throttleCounted(c, n), spoken.Duration(c.QuietFor()), shareWords(c.ThrottleShare()), c.Throttle.Threshold, shareWords(share)))
		next.ThrottleStage = c.ThrottleStage + 1
		return next, f
	}
	restored := "concurrency restored as it was"
	if c.Released != "" {
		restored += ", but for what was changed by hand meanwhile and left as set (" + c.Released + ")"
	}
	return flip(c, Closed, EvaluatorActor, n, now, fmt.Sprintf("%d failures in the %s at %s (throttle rule: more than %d): %s",
		throttleCounted(c, n), spoken.Duration(c.QuietFor()), shareWords(c.ThrottleShare()), c.Throttle.Threshold, restored))
}

// throttleCount says what the throttle rule counted.
func throttleCount(c Circuit, n Counts, now time.Time) string {
	span := "in " + spoken.Duration(c.Window)
	if n.Since.After(now.Add(-c.Window)) {
		span = "since " + clockTime(n.Since)
	}
	if c.Throttle.OnlyThrottling {
		return fmt.Sprintf("%d failures %s said the downstream pushed back (%s), throttle at more than %d%s", n.Throttling, span, c.Throttle.pushedBackWords(), c.Throttle.Threshold, quorumWords(c, n))
	}
	return fmt.Sprintf("%d failures %s, throttle at more than %d%s", n.Counted, span, c.Throttle.Threshold, quorumWords(c, n))
}

// shareWords says a share as people do: "a quarter", "half".
func shareWords(s float64) string {
	switch s {
	case 0.25:
		return "a quarter"
	case 0.5:
		return "half"
	}
	return percent(s)
}

// ThrottleText says the throttle stage in words, as the form previews it.
func (c Circuit) ThrottleText() string {
	if !c.Throttles() {
		return ""
	}
	shares := make([]string, 0, len(throttle.Ramp))
	for _, s := range throttle.Ramp {
		shares = append(shares, shareWords(s))
	}
	failures := "failures"
	if c.Throttle.OnlyThrottling {
		failures = "failures that say the downstream pushed back (" + c.Throttle.pushedBackWords() + ")"
	}
	return fmt.Sprintf("lower the app's %s concurrency to %s on more than %d %s in %s, and come back through %s to exactly what was set, a step each %s under that; a resume comes back at %s too",
		kindWords[c.ThrottleKind()], shareWords(throttle.Ramp[0]), c.Throttle.Threshold, failures, spoken.Duration(c.Window), joinWords(shares[1:]), spoken.Duration(c.QuietFor()), shareWords(throttle.Ramp[0]))
}

func joinWords(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, w := range s[1 : len(s)-1] {
		out += ", " + w
	}
	return out + " and " + s[len(s)-1]
}

// validateThrottle checks the throttle stage's settings.
func (c Circuit) validateThrottle(add func(field, format string, args ...any)) {
	t := c.Throttle
	if t.Threshold == 0 && t.Quiet == 0 && t.Kind == "" && !t.Ask && !t.OnlyThrottling && len(t.Words) == 0 {
		return
	}
	switch {
	case len(t.Words) > pushback.MaxWords:
		add("throttle_words", "may be at most %d words or phrases", pushback.MaxWords)
	case len(t.Words) > 0 && !t.OnlyThrottling:
		add("throttle_words", "are counted only when the throttle counts only failures that say the downstream pushed back: tick that too")
	}
	for _, w := range t.Words {
		if pushback.Word(w) == "" || strings.ContainsFunc(w, unicode.IsControl) {
			add("throttle_words", "%q: each must have at least three letters and be at most %d bytes (letters are compared in any case; digits and punctuation do not count)", w, pushback.MaxWordBytes)
			break
		}
	}
	switch {
	case t.Threshold < 0 || t.Threshold > MaxThreshold:
		add("throttle_threshold", "must be from 0 (no throttle stage) to %d", MaxThreshold)
	case t.Threshold == 0:
		return // the rest is kept for when it is turned on
	case c.Rule.Ratio == 0 && t.Threshold >= c.Threshold:
		add("throttle_threshold", "must be under the trip threshold (%d): the throttle comes before the trip", c.Threshold)
	}
	switch {
	case t.Quiet < 0 || t.Quiet > MaxThrottleQuiet:
		add("throttle_quiet", "must be at most %s", spoken.Duration(MaxThrottleQuiet))
	case t.Quiet != 0 && t.Quiet < c.Window:
		add("throttle_quiet", "must be at least the window (%s): a step up is judged on a whole window", spoken.Duration(c.Window))
	}
	switch {
	case t.Kind != "" && !slices.Contains(ThrottleKinds, t.Kind):
		add("throttle_kind", "must be one of %v", ThrottleKinds)
	case c.ThrottleKind() == "":
		add("throttle_kind", "must say the function's trigger (eventHub, serviceBus or queue), or the circuit must name its event hub or queue")
	}
}

// Bounds on what Lowered holds, so a row written by hand costs little.
const (
	maxLowered      = 16
	maxLoweredValue = 1024
)

// ParseLowered reads the settings a throttle changed, as storage keeps
// them (JSON: setting → value before, null when absent); "" is none.
func ParseLowered(raw string) (map[string]*string, error) {
	if raw == "" {
		return nil, nil
	}
	if len(raw) > maxLowered*(maxLoweredValue+200) {
		return nil, fmt.Errorf("%d bytes: too long", len(raw))
	}
	var m map[string]*string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("not a JSON object of settings: %w", err)
	}
	if err := checkLowered(m); err != nil {
		return nil, err
	}
	return m, nil
}

// FormatLowered is ParseLowered's inverse.
// A record emptied by handing every setting back stays a record ("{}"):
// the throttle holds nothing, and must not read the settings again as if
// it had not begun.
func FormatLowered(m map[string]*string) (string, error) {
	if m == nil {
		return "", nil
	}
	if err := checkLowered(m); err != nil {
		return "", err
	}
	b, err := json.Marshal(m)
	return string(b), err
}

func checkLowered(m map[string]*string) error {
	if len(m) > maxLowered {
		return fmt.Errorf("%d settings: at most %d", len(m), maxLowered)
	}
	for k, v := range m {
		if !throttle.Lever(k) {
			return fmt.Errorf("%q is not a setting a throttle changes", k)
		}
		if v != nil && len(*v) > maxLoweredValue {
			return fmt.Errorf("%s: value too long", k)
		}
	}
	return nil
}
