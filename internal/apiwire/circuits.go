// Package apiwire is the JSON of Fusebox's HTTP API (docs/openapi.yaml),
// spelled once: the handlers answer with these types and bind requests to
// them, and fusebox export and apply read and send the same types.
package apiwire

import (
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Circuit is a circuit as the API answers it: its settings, its state and
// what it counted.
type Circuit struct {
	App             string     `json:"app"`
	Function        string     `json:"function"`
	State           string     `json:"state"`
	Episode         int64      `json:"episode"`
	Count           int        `json:"count"`
	Threshold       int        `json:"threshold"`
	WindowSeconds   int        `json:"window_seconds"`
	FailureRatio    float64    `json:"failure_ratio,omitempty"`
	MinCalls        int        `json:"min_calls,omitempty"`
	MinInstances    int        `json:"min_instances,omitempty"`
	NoSuccess       bool       `json:"no_success"`
	Successes       int        `json:"successes"`
	Rule            string     `json:"rule"`
	Recipients      []string   `json:"recipients"`
	Channels        []string   `json:"channels"`
	EscalateTo      []string   `json:"escalate_to"`
	EscalateSeconds int        `json:"escalate_after_seconds"`
	RetentionHours  int        `json:"event_hub_retention_hours,omitempty"`
	Throttle        *Throttle  `json:"throttle,omitempty"`
	AckedEpisode    int64      `json:"acknowledged_episode,omitempty"`
	AutoResume      bool       `json:"auto_resume"`
	CooldownSeconds int        `json:"cooldown_seconds"`
	MaxCooldownSecs int        `json:"max_cooldown_seconds,omitempty"`
	EventHub        string     `json:"event_hub,omitempty"`
	Streak          int        `json:"trips_in_a_row"`
	Shadow          bool       `json:"shadow"`
	RunbookURL      string     `json:"runbook_url,omitempty"`
	RunbookNote     string     `json:"runbook_note,omitempty"`
	Queue           string     `json:"queue,omitempty"`
	ParkingQueue    string     `json:"parking_queue,omitempty"`
	TrialAt         *time.Time `json:"next_trial_at,omitempty"`
	ChangedAt       time.Time  `json:"changed_at"`
	Reason          string     `json:"reason"`
	Applying        bool       `json:"applying"`
	ApplyError      string     `json:"apply_error,omitempty"`
	ApplyRetryAt    *time.Time `json:"apply_retry_at,omitempty"`
	CountingSince   time.Time  `json:"counting_since"`
	Drift           string     `json:"drift,omitempty"`
	DriftSince      *time.Time `json:"drift_since,omitempty"`
	Flips           []Flip     `json:"flips,omitempty"`
	// Errors group what failed in the window before the trip (trigger
	// off) or the window now; only a single circuit's answer has them.
	Errors      []ErrorGroup `json:"errors,omitempty"`
	ErrorsOther int          `json:"errors_other,omitempty"`
}

// ErrorGroup is one kind of error among a circuit's failures.
type ErrorGroup struct {
	Example   string    `json:"example"`
	Count     int       `json:"count"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	Instances []string  `json:"instances"`
	TraceIDs  []string  `json:"trace_ids,omitempty"`
	Links     []string  `json:"links,omitempty"` // for each of TraceIDs, when the app names its Application Insights
}

// Flip is one entry of a circuit's flip log.
type Flip struct {
	Episode       int64     `json:"episode"`
	From          string    `json:"from"`
	To            string    `json:"to"`
	At            time.Time `json:"at"`
	Actor         string    `json:"actor"`
	Count         int       `json:"count"`
	Calls         int       `json:"calls,omitempty"`
	Since         time.Time `json:"since,omitzero"`
	Threshold     int       `json:"threshold"`
	WindowSeconds int       `json:"window_seconds"`
	Reason        string    `json:"reason"`
}

// Throttle is a circuit's throttle stage.
// Throttle is a circuit's throttle stage in the API.
type Throttle struct {
	Threshold    int      `json:"threshold"`
	QuietSeconds int      `json:"quiet_seconds"`
	Kind         string   `json:"kind"`
	Ask          bool     `json:"ask"`
	OnlyThrottle bool     `json:"only_throttling_errors"`
	Asked        bool     `json:"asked"` // its rule fired; waiting for someone to apply it
	Share        float64  `json:"share"` // of the concurrency before, held now; 0: none
	Rule         string   `json:"rule"`
	Released     string   `json:"released,omitempty"`
	Words        []string `json:"words"`
}

// CircuitSettings is what creating or changing a circuit sends.
type CircuitSettings struct {
	App             string   `json:"app"`
	Function        string   `json:"function"`
	Threshold       int      `json:"threshold"`
	WindowSeconds   int      `json:"window_seconds"`
	FailureRatio    float64  `json:"failure_ratio"`
	MinCalls        int      `json:"min_calls"`
	MinInstances    int      `json:"min_instances"`
	NoSuccess       bool     `json:"no_success"`
	Recipients      []string `json:"recipients"`
	Channels        []string `json:"channels"`
	EscalateTo      []string `json:"escalate_to"`
	EscalateSeconds int      `json:"escalate_after_seconds"`
	EventHub        string   `json:"event_hub"`
	RetentionHours  int      `json:"event_hub_retention_hours"`
	ThrottleAt      int      `json:"throttle_threshold"`
	ThrottleQuiet   int      `json:"throttle_quiet_seconds"`
	ThrottleKind    string   `json:"throttle_kind"`
	ThrottleAsk     bool     `json:"throttle_ask"`
	ThrottleOnly    bool     `json:"throttle_only_throttling_errors"`
	ThrottleWords   []string `json:"throttle_words"`
	Queue           string   `json:"queue,omitempty"`
	ParkingQueue    string   `json:"parking_queue,omitempty"`
	AutoResume      bool     `json:"auto_resume"`
	CooldownSeconds int      `json:"cooldown_seconds"`
	MaxCooldownSecs int      `json:"max_cooldown_seconds"`
	Shadow          bool     `json:"shadow"`
	RunbookURL      string   `json:"runbook_url"`
	RunbookNote     string   `json:"runbook_note"`
}

// Settings are the circuit settings j sends.
func (j CircuitSettings) Settings() circuit.Settings {
	return circuit.Settings{Threshold: j.Threshold, Window: time.Duration(j.WindowSeconds) * time.Second, Recipients: j.Recipients, Channels: j.Channels, EventHub: j.EventHub, Queue: j.Queue, Parking: j.ParkingQueue,
		Escalate: circuit.Escalation{To: j.EscalateTo, After: time.Duration(j.EscalateSeconds) * time.Second}, HubRetention: time.Duration(j.RetentionHours) * time.Hour,
		Throttle: circuit.Throttle{Threshold: j.ThrottleAt, Quiet: time.Duration(j.ThrottleQuiet) * time.Second, Kind: j.ThrottleKind, Ask: j.ThrottleAsk, OnlyThrottling: j.ThrottleOnly, Words: j.ThrottleWords},
		Rule:     circuit.Rule{Ratio: j.FailureRatio, MinCalls: j.MinCalls, NoSuccess: j.NoSuccess, MinInstances: j.MinInstances}, Shadow: j.Shadow,
		Policy:  circuit.Policy{AutoResume: j.AutoResume, Cooldown: time.Duration(j.CooldownSeconds) * time.Second, MaxCooldown: time.Duration(j.MaxCooldownSecs) * time.Second},
		Runbook: circuit.Runbook{URL: j.RunbookURL, Note: j.RunbookNote}}
}

// NewCircuitSettings is what sends settings s for app's function.
func NewCircuitSettings(app, function string, s circuit.Settings) CircuitSettings {
	return CircuitSettings{App: app, Function: function, Threshold: s.Threshold, WindowSeconds: int(s.Window / time.Second),
		FailureRatio: s.Rule.Ratio, MinCalls: s.Rule.MinCalls, NoSuccess: s.Rule.NoSuccess, MinInstances: s.Rule.MinInstances,
		Recipients: nonNil(s.Recipients), Channels: nonNil(s.Channels), EscalateTo: nonNil(s.Escalate.To), EscalateSeconds: int(s.Escalate.After / time.Second),
		EventHub: s.EventHub, RetentionHours: int(s.HubRetention / time.Hour), Queue: s.Queue, ParkingQueue: s.Parking,
		ThrottleAt: s.Throttle.Threshold, ThrottleQuiet: int(s.Throttle.Quiet / time.Second), ThrottleKind: s.Throttle.Kind, ThrottleAsk: s.Throttle.Ask,
		ThrottleOnly: s.Throttle.OnlyThrottling, ThrottleWords: nonNil(s.Throttle.Words),
		AutoResume: s.Policy.AutoResume, CooldownSeconds: int(s.Policy.Cooldown / time.Second), MaxCooldownSecs: int(s.Policy.MaxCooldown / time.Second), Shadow: s.Shadow,
		RunbookURL: s.Runbook.URL, RunbookNote: s.Runbook.Note}
}

// Settings are the settings c answers with.
func (c Circuit) Settings() circuit.Settings {
	s := CircuitSettings{App: c.App, Function: c.Function, Threshold: c.Threshold, WindowSeconds: c.WindowSeconds,
		FailureRatio: c.FailureRatio, MinCalls: c.MinCalls, NoSuccess: c.NoSuccess, MinInstances: c.MinInstances,
		Recipients: c.Recipients, Channels: c.Channels, EscalateTo: c.EscalateTo, EscalateSeconds: c.EscalateSeconds,
		EventHub: c.EventHub, RetentionHours: c.RetentionHours, Queue: c.Queue, ParkingQueue: c.ParkingQueue,
		AutoResume: c.AutoResume, CooldownSeconds: c.CooldownSeconds, MaxCooldownSecs: c.MaxCooldownSecs, Shadow: c.Shadow,
		RunbookURL: c.RunbookURL, RunbookNote: c.RunbookNote}
	if t := c.Throttle; t != nil {
		s.ThrottleAt, s.ThrottleQuiet, s.ThrottleKind, s.ThrottleAsk, s.ThrottleOnly, s.ThrottleWords = t.Threshold, t.QuietSeconds, t.Kind, t.Ask, t.OnlyThrottle, t.Words
	}
	return s.Settings()
}

// nonNil is s, or an empty list: the API sends [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
