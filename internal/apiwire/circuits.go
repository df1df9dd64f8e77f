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
	// Spec is the circuit's settings, as requests send them too.
	circuit.Spec
	App           string     `json:"app"`
	Function      string     `json:"function"`
	State         string     `json:"state"`
	Episode       int64      `json:"episode"`
	Count         int        `json:"count"`
	Successes     int        `json:"successes"`
	Rule          string     `json:"rule"`
	Throttle      *Throttle  `json:"throttle,omitempty"`
	AckedEpisode  int64      `json:"acknowledged_episode,omitempty"`
	Streak        int        `json:"trips_in_a_row"`
	TrialAt       *time.Time `json:"next_trial_at,omitempty"`
	PauseUntil    *time.Time `json:"pause_until,omitempty"` // a pause's end, when the evaluator resumes it
	ChangedAt     time.Time  `json:"changed_at"`
	Reason        string     `json:"reason"`
	Applying      bool       `json:"applying"`
	ApplyError    string     `json:"apply_error,omitempty"`
	ApplyRetryAt  *time.Time `json:"apply_retry_at,omitempty"`
	CountingSince time.Time  `json:"counting_since"`
	Drift         string     `json:"drift,omitempty"`
	DriftSince    *time.Time `json:"drift_since,omitempty"`
	Flips         []Flip     `json:"flips,omitempty"`
	// Errors group what failed in the window before the trip (trigger
	// off) or the window now; only a single circuit's answer has them.
	Errors      []ErrorGroup `json:"errors,omitempty"`
	ErrorsOther int          `json:"errors_other,omitempty"`
	// Probe is what its health probe heard this episode (single circuit
	// only, when it names one).
	Probe *Probe `json:"probe,omitempty"`
}

// Probe is what a circuit's health probe heard in its episode.
type Probe struct {
	Waits   string        `json:"waits,omitempty"` // what waits for it; absent when nothing does
	InARow  int           `json:"good_in_a_row"`
	Answers []ProbeAnswer `json:"answers"`
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
	App      string `json:"app"`
	Function string `json:"function"`
	circuit.Spec
}

// Settings are the circuit settings j sends.
func (j CircuitSettings) Settings() circuit.Settings { return j.Spec.Settings() }

// NewCircuitSettings is what sends settings s for app's function.
func NewCircuitSettings(app, function string, s circuit.Settings) CircuitSettings {
	return CircuitSettings{App: app, Function: function, Spec: s.Spec()}
}

// Settings are the settings c answers with.
func (c Circuit) Settings() circuit.Settings { return c.Spec.Settings() }
