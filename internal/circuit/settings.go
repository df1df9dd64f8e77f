package circuit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox/fusebox/internal/pushback"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/validation"
)

// Settings are the parts of a circuit people edit, as the domain reads
// them. Documents spell them as Spec: a new setting is a field of each,
// and a line of each conversion below, all in this file.
type Settings struct {
	Threshold  int           // trips when more than Threshold failures...
	Window     time.Duration // ...happen within Window
	Rule       Rule          // or on a failure ratio, when Rule.Ratio is set
	Recipients []string      // who is mailed when it opens
	// Channels names the channels its alerts go to; none: the app's.
	Channels []string
	// Escalate is who else is told when an episode goes unacknowledged.
	Escalate Escalation
	// EventHub is the hub the function's trigger consumes — hub,
	// hub/consumer group or namespace/hub/consumer group (see Consumes) —
	// so its page shows its own checkpoints; empty: every checkpoint in the
	// app's storage, unattributed.
	EventHub string
	// HubRetention is how long that hub keeps an event (its message
	// retention), so the page and reminders say when waiting events begin
	// to expire; zero: not known.
	HubRetention time.Duration
	// Queue is the queue that triggers the function, for a queue-triggered
	// one: the host sets its poison messages aside in "<Queue>-poison".
	Queue string
	// Parking is the queue the function's own code parks events it gave
	// up on, so the stream goes on (the seed's pattern for Event Hubs).
	Parking string
	Policy  Policy
	// Throttle is the stage before the trip: lower the app's concurrency
	// when its rule fires, and ramp back up after a resume. Off when its
	// Threshold is zero.
	Throttle Throttle
	// Shadow disarms the switch: the circuit counts, changes state, logs
	// and alerts what it would do, but never moves the trigger. For
	// rolling out a new circuit safely.
	Shadow bool
	// Runbook is what the person paged should read first: shown on the
	// circuit's page and in every alert about it.
	Runbook Runbook
	// ResumeFrom is the way back offered first for an Event Hubs function
	// (ResumeFromFirstFailure or ResumeFromCheckpoint); empty: the app's.
	ResumeFrom string
	// AlertRules are the Azure Monitor alert rules, by resource id, whose
	// "Fired" trips the circuit (docs/alerts.md). "Resolved" resumes
	// nothing: a person does, or the circuit's own trial.
	AlertRules []string
	// PauseWindows are planned pauses, one-off or recurring: the
	// evaluator pauses the circuit when one opens and resumes it when it
	// ends (docs/pauses.md).
	PauseWindows []PauseWindow
	// Probe, when it names a URL, gates the automatic trials (after the
	// cooldown, after an alert rule resolved) on good answers in a row.
	Probe Probe
}

// The ways back from a trip of an Event Hubs function: from before the
// episode's first failure (the events the failures skipped are replayed)
// or from where the checkpoint stopped.
const (
	ResumeFromFirstFailure = "first-failure"
	ResumeFromCheckpoint   = "checkpoint"
)

// ValidResumeFrom says whether s names a way back, or none ("").
func ValidResumeFrom(s string) bool {
	return s == "" || s == ResumeFromFirstFailure || s == ResumeFromCheckpoint
}

// OffersFirst is the way back offered first for c of app: the circuit's,
// else the app's, else from before the first failure, which loses
// nothing.
func OffersFirst(c Circuit, app App) string {
	switch {
	case c.ResumeFrom != "":
		return c.ResumeFrom
	case app.ResumeFrom != "":
		return app.ResumeFrom
	}
	return ResumeFromFirstFailure
}

// Runbook is a link to what to do when a circuit trips, and a short note.
type Runbook struct {
	URL  string // http or https; empty: none
	Note string // at most MaxRunbookNote bytes, one line
}

// MaxAlertRules bounds the rules a circuit names.
const MaxAlertRules = 10

// ValidAlertRule says r is an alert rule's resource id: what Azure
// Monitor's common alert schema sends as alertRuleID.
//
// A rule a circuit names may be prefixed "throttle:": when it fires, it
// throttles the circuit rather than trip it (RuleAction).
func ValidAlertRule(r string) bool {
	if len(r) > 512+len("throttle:") {
		return false
	}
	r, _ = RuleAction(r)
	l := strings.ToLower(r)
	return len(r) <= 512 && strings.HasPrefix(l, "/subscriptions/") && strings.Contains(l, "/providers/microsoft.insights/") &&
		!strings.ContainsFunc(r, func(c rune) bool { return c <= ' ' || c == 0x7f })
}

// RuleAction reads an alert rule as a circuit names it: its id, and
// "throttle" or "trip".
func RuleAction(r string) (id, action string) {
	if id, ok := strings.CutPrefix(r, "throttle:"); ok {
		return id, "throttle"
	}
	return r, "trip"
}

// NamesAlertRule says s names the rule id (resource ids compare in any case).
func (s Settings) NamesAlertRule(id string) bool {
	_, ok := s.AlertRuleAction(id)
	return ok
}

// AlertRuleAction is what the rule id does to the circuit ("trip" or
// "throttle"), if the circuit names it.
func (s Settings) AlertRuleAction(id string) (string, bool) {
	for _, r := range s.AlertRules {
		if rid, action := RuleAction(r); strings.EqualFold(rid, id) {
			return action, true
		}
	}
	return "", false
}

// Limits of a runbook.
const (
	MaxRunbookURL  = 2000
	MaxRunbookNote = 300
)

// checkEach adds what is wrong with each setting taken alone, named by
// the field its form and documents spell it with. A new setting's own
// rule goes here; Validate adds the rules that weigh settings together or
// need the app.
func (s Settings) checkEach(add func(field, format string, args ...any)) {
	if len(s.AlertRules) > MaxAlertRules {
		add("alert_rules", "at most %d rules", MaxAlertRules)
	}
	if len(s.PauseWindows) > MaxPauseWindows {
		add("pause_windows", "at most %d windows", MaxPauseWindows)
	}
	for _, p := range s.PauseWindows {
		if msg := cmp.Or(p.bad, p.Check()); msg != "" {
			add("pause_windows", "%s", msg)
			break
		}
	}
	for _, r := range s.AlertRules {
		if !ValidAlertRule(r) {
			add("alert_rules", "%q is not an alert rule's resource id: /subscriptions/…/providers/microsoft.insights/metricAlerts/<name> (or scheduledQueryRules, activityLogAlerts), as the rule's JSON view shows it", r)
			break
		}
	}
	if u, good, every := s.Probe.Problems(true); u+good+every != "" {
		// Loopback passes here: the guarded dialer refuses it outside
		// development.
		for _, f := range [][2]string{{"probe_url", u}, {"probe_good", good}, {"probe_every", every}} {
			if f[1] != "" {
				add(f[0], "%s", f[1])
			}
		}
	}
	if !ValidResumeFrom(s.ResumeFrom) {
		add("resume_from", "must be %s, %s or empty (the app's choice)", ResumeFromFirstFailure, ResumeFromCheckpoint)
	}
	if u, n := s.Runbook.Problems(); u != "" || n != "" {
		if u != "" {
			add("runbook_url", "%s", u)
		}
		if n != "" {
			add("runbook_note", "%s", n)
		}
	}
}

// Stored are the settings a stored document spells, checked as anything
// written by others is: what would break counting, or reach a page or a
// mail unsafe, is an error; what costs only its own feature is left out.
func (s Spec) Stored() (Settings, error) {
	set := s.Settings()
	if set.Threshold < 1 || set.Window < time.Second {
		return Settings{}, fmt.Errorf("threshold %d and window %s must both be positive", set.Threshold, set.Window)
	}
	if (set.Rule.Ratio != 0 || set.Rule.MinCalls != 0) && !(set.Rule.Ratio > 0 && set.Rule.Ratio <= 1 && set.Rule.MinCalls >= 1) {
		return Settings{}, fmt.Errorf("failure ratio %v must be in (0, 1] and its minimum of calls %d at least 1", set.Rule.Ratio, set.Rule.MinCalls)
	}
	if !ValidResumeFrom(set.ResumeFrom) {
		set.ResumeFrom = "" // costs only which way back is offered first
	}
	// A rule id written by hand that is not one costs only what it would
	// trip on.
	set.AlertRules = slices.DeleteFunc(slices.Clone(set.AlertRules), func(r string) bool { return !ValidAlertRule(r) })
	set.AlertRules = set.AlertRules[:min(len(set.AlertRules), MaxAlertRules)]
	if len(set.AlertRules) == 0 {
		set.AlertRules = nil
	}
	// So does a probe that is not one: the trials are then not gated.
	if u, good, every := set.Probe.Problems(true); u+good+every != "" {
		set.Probe = Probe{}
	}
	// So does a pause window that does not read.
	set.PauseWindows = slices.DeleteFunc(set.PauseWindows, func(p PauseWindow) bool { return p.bad != "" || p.Check() != "" })
	set.PauseWindows = set.PauseWindows[:min(len(set.PauseWindows), MaxPauseWindows)]
	var problems validation.Error
	set.checkEach(problems.Add)
	if err := problems.Err(); err != nil {
		return Settings{}, err
	}
	// Out of range (written by hand), these cost only their feature.
	if set.Throttle.Threshold < 0 || set.Throttle.Threshold > MaxThreshold {
		set.Throttle = Throttle{}
	}
	if set.Throttle.Quiet < 0 || set.Throttle.Quiet > MaxThrottleQuiet {
		set.Throttle.Quiet = 0
	}
	set.Throttle.Words = storedWords(set.Throttle.Words)
	if set.Rule.MinInstances < 0 || set.Rule.MinInstances > MaxQuorum {
		set.Rule.MinInstances = 0
	}
	if set.HubRetention < 0 || set.HubRetention > MaxHubRetention {
		set.HubRetention = 0
	}
	return set, nil
}

// storedWords are a document's throttle words, bounded as Validate bounds
// them: one written by hand costs at most pushback.MaxWords words, and a
// word that could not be typed in is dropped.
func storedWords(words []string) []string {
	var out []string
	for _, w := range words {
		if len(out) == pushback.MaxWords {
			break
		}
		if len(w) <= pushback.MaxWordBytes && pushback.Word(w) != "" {
			out = append(out, w)
		}
	}
	return out
}

// Problems says what is wrong with r, for people; none when it is empty.
func (r Runbook) Problems() (url, note string) {
	if r.URL != "" {
		u, err := neturl.Parse(r.URL)
		switch {
		case len(r.URL) > MaxRunbookURL:
			url = fmt.Sprintf("must be at most %d characters", MaxRunbookURL)
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsFunc(r.URL, unicode.IsSpace):
			url = "must be a web address starting with https:// (or http://)"
		}
	}
	switch {
	case len(r.Note) > MaxRunbookNote:
		note = fmt.Sprintf("must be at most %d characters", MaxRunbookNote)
	case strings.ContainsFunc(r.Note, unicode.IsControl):
		note = "must be one line of text"
	}
	return url, note
}

// Spec is a circuit's settings as every document spells them, once: the
// API's requests and answers (json tags), fusebox export and apply's file
// (yaml tags) and the circuit's row in storage (its Settings column holds
// this JSON). Nothing in it is state: writers of state never touch it.
type Spec struct {
	Threshold    int     `json:"threshold" yaml:"threshold"`
	Window       Seconds `json:"window_seconds" yaml:"window"`
	FailureRatio float64 `json:"failure_ratio,omitempty" yaml:"failure_ratio,omitempty"`
	MinCalls     int     `json:"min_calls,omitempty" yaml:"min_calls,omitempty"`
	NoSuccess    bool    `json:"no_success" yaml:"no_success,omitempty"`
	MinInstances int     `json:"min_instances,omitempty" yaml:"min_instances,omitempty"`
	// Lists are [] rather than null in JSON (SpecOf makes them so).
	Recipients    []string `json:"recipients" yaml:"recipients,omitempty"`
	Channels      []string `json:"channels" yaml:"channels,omitempty"`
	EscalateTo    []string `json:"escalate_to" yaml:"escalate_to,omitempty"`
	EscalateAfter Seconds  `json:"escalate_after_seconds" yaml:"escalate_after,omitempty"`
	AutoResume    bool     `json:"auto_resume" yaml:"auto_resume,omitempty"`
	Cooldown      Seconds  `json:"cooldown_seconds" yaml:"cooldown,omitempty"`
	MaxCooldown   Seconds  `json:"max_cooldown_seconds,omitempty" yaml:"max_cooldown,omitempty"`
	Shadow        bool     `json:"shadow" yaml:"shadow,omitempty"`
	EventHub      string   `json:"event_hub,omitempty" yaml:"event_hub,omitempty"`
	HubRetention  Hours    `json:"event_hub_retention_hours,omitempty" yaml:"event_hub_retention,omitempty"`
	Queue         string   `json:"queue,omitempty" yaml:"queue,omitempty"`
	ParkingQueue  string   `json:"parking_queue,omitempty" yaml:"parking_queue,omitempty"`
	// The throttle stage before the trip (docs/throttle.md).
	ThrottleThreshold int      `json:"throttle_threshold,omitempty" yaml:"throttle_threshold,omitempty"`
	ThrottleQuiet     Seconds  `json:"throttle_quiet_seconds,omitempty" yaml:"throttle_quiet,omitempty"`
	ThrottleKind      string   `json:"throttle_kind,omitempty" yaml:"throttle_kind,omitempty"`
	ThrottleAsk       bool     `json:"throttle_ask,omitempty" yaml:"throttle_ask,omitempty"`
	ThrottleOnly      bool     `json:"throttle_only_throttling_errors,omitempty" yaml:"throttle_only_throttling_errors,omitempty"`
	ThrottleWords     []string `json:"throttle_words,omitempty" yaml:"throttle_words,omitempty"`
	// What the person paged reads first (a link and a short note).
	RunbookURL  string `json:"runbook_url,omitempty" yaml:"runbook_url,omitempty"`
	RunbookNote string `json:"runbook_note,omitempty" yaml:"runbook_note,omitempty"`
	// The way back offered first for an Event Hubs function (docs/replay.md).
	ResumeFrom string `json:"resume_from,omitempty" yaml:"resume_from,omitempty"`
	// Azure Monitor alert rules whose "Fired" trips it (docs/alerts.md).
	AlertRules []string `json:"alert_rules,omitempty" yaml:"alert_rules,omitempty"`
	// Planned pauses: "0 2 * * * for 1h in Europe/Paris", "2026-12-08T02:00:00Z for 1h".
	PauseWindows []string `json:"pause_windows,omitempty" yaml:"pause_windows,omitempty"`
	// A health probe that gates the automatic trials (docs/alerts.md).
	ProbeURL   string  `json:"probe_url,omitempty" yaml:"probe_url,omitempty"`
	ProbeGood  int     `json:"probe_good,omitempty" yaml:"probe_good,omitempty"`
	ProbeEvery Seconds `json:"probe_every_seconds,omitempty" yaml:"probe_every,omitempty"`
}

// Settings are the settings s spells.
func (s Spec) Settings() Settings {
	return Settings{
		Threshold:    s.Threshold,
		Window:       time.Duration(s.Window),
		Rule:         Rule{Ratio: s.FailureRatio, MinCalls: s.MinCalls, NoSuccess: s.NoSuccess, MinInstances: s.MinInstances},
		Recipients:   orNil(s.Recipients),
		Channels:     orNil(s.Channels),
		Escalate:     Escalation{To: orNil(s.EscalateTo), After: time.Duration(s.EscalateAfter)},
		EventHub:     s.EventHub,
		HubRetention: time.Duration(s.HubRetention),
		Queue:        s.Queue,
		Parking:      s.ParkingQueue,
		Policy:       Policy{AutoResume: s.AutoResume, Cooldown: time.Duration(s.Cooldown), MaxCooldown: time.Duration(s.MaxCooldown)},
		Throttle: Throttle{Threshold: s.ThrottleThreshold, Quiet: time.Duration(s.ThrottleQuiet), Kind: s.ThrottleKind, Ask: s.ThrottleAsk,
			OnlyThrottling: s.ThrottleOnly, Words: orNil(s.ThrottleWords)},
		Shadow:       s.Shadow,
		Runbook:      Runbook{URL: s.RunbookURL, Note: s.RunbookNote},
		ResumeFrom:   s.ResumeFrom,
		AlertRules:   orNil(s.AlertRules),
		PauseWindows: pauseWindowsOf(s.PauseWindows),
		Probe:        Probe{URL: s.ProbeURL, Good: s.ProbeGood, Every: time.Duration(s.ProbeEvery)},
	}
}

// pauseWindowsOf reads a document's pause windows; one that does not read
// is kept, saying why, for checkEach to name (Stored drops it).
func pauseWindowsOf(lines []string) []PauseWindow {
	var out []PauseWindow
	for _, l := range lines {
		p, err := ParsePauseWindow(l)
		if err != nil {
			p = PauseWindow{bad: err.Error()}
		}
		out = append(out, p)
	}
	return out
}

// Spec is how documents spell s.
func (s Settings) Spec() Spec {
	return Spec{
		Threshold: s.Threshold, Window: Seconds(s.Window),
		FailureRatio: s.Rule.Ratio, MinCalls: s.Rule.MinCalls, NoSuccess: s.Rule.NoSuccess, MinInstances: s.Rule.MinInstances,
		Recipients: nonNil(s.Recipients), Channels: nonNil(s.Channels),
		EscalateTo: nonNil(s.Escalate.To), EscalateAfter: Seconds(s.Escalate.After),
		AutoResume: s.Policy.AutoResume, Cooldown: Seconds(s.Policy.Cooldown), MaxCooldown: Seconds(s.Policy.MaxCooldown),
		Shadow: s.Shadow, EventHub: s.EventHub, HubRetention: Hours(s.HubRetention), Queue: s.Queue, ParkingQueue: s.Parking,
		ThrottleThreshold: s.Throttle.Threshold, ThrottleQuiet: Seconds(s.Throttle.Quiet), ThrottleKind: s.Throttle.Kind,
		ThrottleAsk: s.Throttle.Ask, ThrottleOnly: s.Throttle.OnlyThrottling, ThrottleWords: s.Throttle.Words,
		RunbookURL: s.Runbook.URL, RunbookNote: s.Runbook.Note, ResumeFrom: s.ResumeFrom, AlertRules: s.AlertRules,
		PauseWindows: PauseWindowLines(s.PauseWindows),
		ProbeURL:     s.Probe.URL, ProbeGood: s.Probe.Good, ProbeEvery: Seconds(s.Probe.Every),
	}
}

// PauseWindowLines spells windows as forms, documents and storage do.
func PauseWindowLines(ps []PauseWindow) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// orNil is s, or nil for an empty list: the domain has no empty lists.
func orNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// nonNil is s, or an empty list: JSON says [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Seconds is a duration that JSON spells in whole seconds (the API's
// *_seconds fields) and YAML as people write it: 30s, 5m, 1h30m.
type Seconds time.Duration

// Hours is a duration that JSON spells in whole hours and YAML as people
// write it: 168h.
type Hours time.Duration

// MarshalJSON writes whole seconds.
func (d Seconds) MarshalJSON() ([]byte, error) { return wholeUnits(time.Duration(d), time.Second), nil }

// UnmarshalJSON reads whole seconds.
func (d *Seconds) UnmarshalJSON(b []byte) error {
	return readUnits((*time.Duration)(d), b, time.Second)
}

// MarshalYAML writes the duration as people write it.
func (d Seconds) MarshalYAML() (any, error) { return spoken.Duration(time.Duration(d)), nil }

// UnmarshalYAML reads 30s, 5m, 1h30m.
func (d *Seconds) UnmarshalYAML(n *yaml.Node) error { return readSpoken((*time.Duration)(d), n) }

// MarshalJSON writes whole hours.
func (d Hours) MarshalJSON() ([]byte, error) { return wholeUnits(time.Duration(d), time.Hour), nil }

// UnmarshalJSON reads whole hours.
func (d *Hours) UnmarshalJSON(b []byte) error { return readUnits((*time.Duration)(d), b, time.Hour) }

// MarshalYAML writes the duration as people write it.
func (d Hours) MarshalYAML() (any, error) { return spoken.Duration(time.Duration(d)), nil }

// UnmarshalYAML reads 168h.
func (d *Hours) UnmarshalYAML(n *yaml.Node) error { return readSpoken((*time.Duration)(d), n) }

func wholeUnits(d, unit time.Duration) []byte { return strconv.AppendInt(nil, int64(d/unit), 10) }

// readUnits reads a whole number of units, refusing one a Duration
// cannot hold rather than wrapping it.
func readUnits(d *time.Duration, b []byte, unit time.Duration) error {
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("must be a whole number: %w", err)
	}
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		return fmt.Errorf("%d is too large", n)
	}
	*d = time.Duration(n) * unit
	return nil
}

// readSpoken reads a duration from a YAML scalar. Its error is a
// yaml.TypeError naming the line, so a file's other problems are found too.
func readSpoken(d *time.Duration, n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration such as 30s, 5m or 1h30m", n.Line, n.Value)}}
	}
	*d = v
	return nil
}
