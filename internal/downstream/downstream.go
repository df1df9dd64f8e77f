// Package downstream is a dependency many functions call — a database, a
// store, a partner's API — named once, with its member circuits across
// apps. When it fails, it trips, tries and resumes every member together,
// each through its own app's switch, as one episode told once per
// channel: an Azure Monitor alert on it, its members failing in enough
// apps (its quorum), or a person's hand. Recovery is never blind: a
// resolved alert starts a trial only after the downstream's health probe
// answered well enough times in a row, and the members' own counts decide
// whether they close.
//
// The members' circuits keep their own state and switches; a downstream
// only keeps its own episode, its probe's answers and what it did. A
// member's flips carry the downstream's mark ("name#episode") so that
// the member's own notices give way to the downstream's one.
package downstream

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// State is where a downstream stands.
type State int

const (
	// Closed: its members run on their own.
	Closed State = iota
	// Open: its members' triggers are off by the downstream.
	Open
	// Waiting: its alert resolved; the probe must answer well Probe.Good
	// times in a row before the trial starts.
	Waiting
	// Trial: its members' triggers are back on, half-open; their own
	// counts decide, and once every member closed the downstream closes.
	Trial
)

func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case Waiting:
		return "waiting for the probe"
	case Trial:
		return "on trial"
	}
	return "closed"
}

// Word is the state as stored and as the API spells it.
func (s State) Word() string {
	switch s {
	case Open:
		return "open"
	case Waiting:
		return "waiting"
	case Trial:
		return "trial"
	}
	return "closed"
}

// ParseState reads Word.
func ParseState(w string) (State, error) {
	for _, s := range []State{Closed, Open, Waiting, Trial} {
		if s.Word() == w {
			return s, nil
		}
	}
	return Closed, fmt.Errorf("downstream: %q is not a state", w)
}

// Off says the downstream holds its members' triggers off.
func (s State) Off() bool { return s == Open || s == Waiting }

// Limits.
const (
	MaxMembers    = 50
	MaxDownstream = 200 // downstreams read at most
	MaxProbes     = 10  // probe answers kept
	MaxGood       = 20
	MaxReason     = 500
	MaxActions    = 20 // what a downstream did, kept
)

// Actions an alert rule takes on a downstream or a circuit.
const (
	ActionTrip     = "trip"
	ActionThrottle = "throttle"
)

// Rule is an Azure Monitor alert rule a downstream names, and what it
// does when it fires.
type Rule struct {
	ID     string // the rule's resource id
	Action string // ActionTrip or ActionThrottle
}

// Probe is an https health URL and how many good answers in a row start
// a trial; Answer is one of its calls (as a circuit's probe).
type (
	Probe  = circuit.Probe
	Answer = circuit.ProbeAnswer
)

// Downstream is one dependency and its members.
type Downstream struct {
	Name string
	Team string // "" for admins'
	// Members are circuits, "app/function", across apps.
	Members []string
	// Quorum trips every member once members of at least this many
	// distinct apps fail (trip on their own counts); 0: never on counts.
	Quorum     int
	Rules      []Rule
	Probe      Probe
	Channels   []string // told besides the members' own destinations
	Recipients []string
	Note       string
	// PauseWindows pause every member when one opens, until it ends.
	PauseWindows []circuit.PauseWindow

	State     State
	Episode   int64
	ChangedAt time.Time
	Reason    string
	Actor     string
	// Answers are the probe's latest answers, oldest first; InARow counts
	// the good ones at their end.
	Answers []Answer
	InARow  int
	// PauseUntil is when a pause of its members ends; zero: none.
	PauseUntil time.Time
	Version    string
}

// Mark is what the members' flips of this episode carry.
func (d Downstream) Mark() string { return fmt.Sprintf("%s#%d", d.Name, d.Episode) }

// MarkOf reads a mark: the downstream's name and episode.
func MarkOf(mark string) (name string, episode int64, ok bool) {
	name, n, ok := strings.Cut(mark, "#")
	if !ok || !ValidName(name) {
		return "", 0, false
	}
	var e int64
	if _, err := fmt.Sscan(n, &e); err != nil || e < 1 {
		return "", 0, false
	}
	return name, e, true
}

// Marks says the circuit's current episode is this downstream's doing.
func (d Downstream) Marks(c circuit.Circuit) bool {
	name, _, ok := MarkOf(c.Downstream)
	return ok && name == d.Name
}

var nameRE = regexp.MustCompile(`^(?:[a-z0-9][a-z0-9-]{0,39}\.)?[a-z0-9][a-z0-9-]{0,62}$`)

// ValidName says n can name a downstream: lower case letters, digits and
// dashes, at most 63, after its team's name and a dot when a team's
// operator named it (access.Scope.Name).
func ValidName(n string) bool { return nameRE.MatchString(n) }

// Apps are the distinct apps of the members, sorted.
func (d Downstream) Apps() []string {
	var out []string
	for _, m := range d.Members {
		if app, _, ok := circuit.SplitID(m); ok && !slices.Contains(out, app) {
			out = append(out, app)
		}
	}
	slices.Sort(out)
	return out
}

// Has says id is a member.
func (d Downstream) Has(id string) bool { return slices.Contains(d.Members, id) }

// RuleFor is what the alert rule id does to the downstream, if it names it.
func (d Downstream) RuleFor(id string) (Rule, bool) {
	for _, r := range d.Rules {
		if strings.EqualFold(r.ID, id) {
			return r, true
		}
	}
	return Rule{}, false
}

// Settled is d with the settings a person set in s (members, quorum,
// rules, probe, who is told, note); its name, team and state stay.
func (d Downstream) Settled(s Downstream) Downstream {
	d.Members, d.Quorum, d.Rules, d.Probe = s.Members, s.Quorum, s.Rules, s.Probe
	d.Channels, d.Recipients, d.Note, d.PauseWindows = s.Channels, s.Recipients, s.Note, s.PauseWindows
	return d
}

// WithDefaults fills what the zero value leaves to defaults.
func (d Downstream) WithDefaults() Downstream {
	if d.Probe.URL != "" {
		if d.Probe.Good == 0 {
			d.Probe.Good = 3
		}
		if d.Probe.Every == 0 {
			d.Probe.Every = 10 * time.Second
		}
	}
	for i, r := range d.Rules {
		if r.Action == "" {
			d.Rules[i].Action = ActionTrip
		}
	}
	return d
}

// ValidationError names what is wrong, by field.
type ValidationError map[string]string

func (v ValidationError) Error() string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, f+": "+v[f])
	}
	return "downstream: " + strings.Join(parts, "; ")
}

// Check says what is wrong with the downstream's settings, by field, or
// nil. allowLoopback admits http:// probes of loopback hosts
// (development and tests); anything else must be https.
func (d Downstream) Check(allowLoopback bool) error {
	v := ValidationError{}
	if !ValidName(d.Name) {
		v["name"] = "lower case letters, digits and dashes, at most 63, such as inventory-db"
	}
	switch {
	case len(d.Members) == 0:
		v["members"] = "name at least one circuit, as app/function"
	case len(d.Members) > MaxMembers:
		v["members"] = fmt.Sprintf("at most %d circuits", MaxMembers)
	}
	seen := map[string]bool{}
	for _, m := range d.Members[:min(len(d.Members), MaxMembers)] { // past the bound, already refused
		if _, _, ok := circuit.SplitID(m); !ok {
			v["members"] = fmt.Sprintf("%q is not app/function", clip(m, 100))
			break
		}
		if seen[m] {
			v["members"] = fmt.Sprintf("%s is named twice", m)
			break
		}
		seen[m] = true
	}
	if apps := len(d.Apps()); d.Quorum < 0 || (d.Quorum > apps && v["members"] == "") {
		v["quorum"] = fmt.Sprintf("between 0 (never on counts) and %d, the apps its members are in", apps)
	}
	if len(d.Rules) > circuit.MaxAlertRules {
		v["alert_rules"] = fmt.Sprintf("at most %d rules", circuit.MaxAlertRules)
	}
	for _, r := range d.Rules {
		if !circuit.ValidAlertRule(r.ID) {
			v["alert_rules"] = fmt.Sprintf("%q is not an alert rule's resource id: /subscriptions/…/providers/microsoft.insights/metricAlerts/<name>", clip(r.ID, 100))
			break
		}
		if r.Action != ActionTrip && r.Action != ActionThrottle {
			v["alert_rules"] = fmt.Sprintf("a rule trips or throttles, not %q", clip(r.Action, 20))
			break
		}
	}
	if d.Probe.URL != "" {
		if msg := circuit.CheckProbeURL(d.Probe.URL, allowLoopback); msg != "" {
			v["probe_url"] = msg
		}
		if d.Probe.Good < 1 || d.Probe.Good > MaxGood {
			v["probe_good"] = fmt.Sprintf("between 1 and %d answers in a row", MaxGood)
		}
		if d.Probe.Every < time.Second || d.Probe.Every > 10*time.Minute {
			v["probe_every"] = "between 1s and 10m"
		}
	}
	if len(d.PauseWindows) > circuit.MaxPauseWindows {
		v["pause_windows"] = fmt.Sprintf("at most %d windows", circuit.MaxPauseWindows)
	}
	for _, p := range d.PauseWindows {
		if msg := p.Check(); msg != "" {
			v["pause_windows"] = msg
			break
		}
	}
	if len(d.Note) > MaxReason {
		v["note"] = fmt.Sprintf("at most %d characters", MaxReason)
	}
	if len(v) > 0 {
		return v
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Errors of transitions.
var (
	ErrAlreadyOff = errors.New("downstream: its members are already off")
	ErrNotOff     = errors.New("downstream: its members are not off: nothing to try or resume")
	ErrNotFound   = errors.New("downstream: no such downstream")
	ErrConflict   = errors.New("downstream: changed concurrently")
)

// change moves d to a new state, a new episode when it trips.
func change(d Downstream, to State, actor, reason string, now time.Time) Downstream {
	if to == Open && !d.State.Off() && d.State != Trial {
		d.Episode++
		d.Answers, d.InARow = nil, 0
	}
	d.State, d.ChangedAt, d.Actor, d.Reason = to, now, actor, clip(reason, MaxReason)
	d.PauseUntil = time.Time{}
	return d
}

// Trip opens a closed downstream, or one on trial, as a new episode.
func Trip(d Downstream, actor, reason string, now time.Time) (Downstream, error) {
	if d.State.Off() {
		return d, ErrAlreadyOff
	}
	// A trip during a trial continues the trial's episode (change).
	return change(d, Open, actor, reason, now), nil
}

// Pause switches its members off until until, as a new episode, when a
// pause window opens (or a person pauses it).
func Pause(d Downstream, actor, reason string, until, now time.Time) (Downstream, error) {
	if !until.After(now) || until.Sub(now) > circuit.MaxPause {
		return d, circuit.ErrPause
	}
	d, err := Trip(d, actor, fmt.Sprintf("%s, until %s", reason, until.UTC().Format("2006-01-02 15:04 MST")), now)
	if err != nil {
		return d, err
	}
	d.PauseUntil = until
	return d, nil
}

// PauseDue is the pause window that opens on the closed downstream at
// now, and when it ends: an opening nobody changed the downstream since.
func PauseDue(d Downstream, now time.Time) (circuit.PauseWindow, time.Time, bool) {
	if d.State != Closed {
		return circuit.PauseWindow{}, time.Time{}, false
	}
	for _, p := range d.PauseWindows {
		if start, end, ok := p.Opening(now); ok && d.ChangedAt.Before(start) && end.Sub(now) >= time.Second {
			return p, end, true
		}
	}
	return circuit.PauseWindow{}, time.Time{}, false
}

// PauseEnded puts the downstream's members on trial when its pause ends:
// each member's own pause ends then too, and the evaluator resumes it; the
// downstream closes once they all have (Settle).
func PauseEnded(d Downstream, now time.Time) (Downstream, bool) {
	if !d.State.Off() || d.PauseUntil.IsZero() || now.Before(d.PauseUntil) {
		return d, false
	}
	return change(d, Trial, circuit.EvaluatorActor, "the pause ended: its members resume", now), true
}

// Resolved is its alert saying the cause is gone: with a probe, wait for
// it; without, try at once.
func Resolved(d Downstream, actor, reason string, now time.Time) (Downstream, error) {
	if !d.State.Off() {
		return d, ErrNotOff
	}
	if d.Probe.URL != "" {
		d = change(d, Waiting, actor, reason+"; the trial starts after the probe answers well "+plural(d.Probe.Good, "time")+" in a row", now)
		d.InARow = 0
		return d, nil
	}
	return change(d, Trial, actor, reason, now), nil
}

// Resume switches its members back on, by hand: the downstream closes.
func Resume(d Downstream, actor, reason string, now time.Time) (Downstream, error) {
	if d.State == Closed {
		return d, ErrNotOff
	}
	return change(d, Closed, actor, reason, now), nil
}

// Heard adds a probe answer; a waiting downstream whose probe answered
// well Probe.Good times in a row starts its trial (tried says so).
func Heard(d Downstream, a Answer) (next Downstream, tried bool) {
	d.Answers = append(d.Answers, a)
	if len(d.Answers) > MaxProbes {
		d.Answers = slices.Clone(d.Answers[len(d.Answers)-MaxProbes:])
	}
	if a.Good {
		d.InARow++
	} else {
		d.InARow = 0
	}
	if d.State == Waiting && d.InARow >= d.Probe.Good {
		return change(d, Trial, "probe", fmt.Sprintf("the probe answered well %s in a row: members' triggers on for a trial; their own counts decide", plural(d.InARow, "time")), a.At), true
	}
	return d, false
}

// ProbeDue says whether the probe is to be called at now: while the
// downstream is off, every Probe.Every.
func (d Downstream) ProbeDue(now time.Time) bool {
	if d.Probe.URL == "" || !d.State.Off() {
		return false
	}
	if len(d.Answers) == 0 {
		return true
	}
	return !now.Before(d.Answers[len(d.Answers)-1].At.Add(d.Probe.Every))
}

// Settle ends a trial from its members: closed once every member it
// tried closed (or was taken over by a person), open again when one of
// them opened again.
func Settle(d Downstream, members []circuit.Circuit, now time.Time) (Downstream, bool) {
	if d.State != Trial {
		return d, false
	}
	var reopened []string
	for _, c := range members {
		if !d.Marks(c) {
			continue
		}
		switch {
		case c.State == circuit.HalfOpen, c.State == circuit.Throttled:
			return d, false // still on trial, or ramping up
		case c.State == circuit.ForcedOpen:
			// Not on trial yet: the trial is still reaching it (the keeper
			// puts members on trial one by one after storing the trial,
			// and tries again those it did not reach), or its pause ends
			// with the downstream's and the evaluator resumes it. A member
			// failing its trial opens on its own counts (Open).
			return d, false
		case c.State.TriggerOff():
			reopened = append(reopened, c.ID())
		}
	}
	if len(reopened) > 0 {
		return change(d, Open, circuit.EvaluatorActor, "the trial failed: "+strings.Join(reopened, ", ")+" failed again", now), true
	}
	return change(d, Closed, circuit.EvaluatorActor, "every member closed after its trial", now), true
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
