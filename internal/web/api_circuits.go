package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
)

// The JSON API for circuits (docs/openapi.yaml). Scripts authenticate with
// an API token (Authorization: Bearer fbt_...); browsers may use their
// session, sending the CSRF token in X-CSRF-Token for changes.

type circuitJSON struct {
	App             string        `json:"app"`
	Function        string        `json:"function"`
	State           string        `json:"state"`
	Episode         int64         `json:"episode"`
	Count           int           `json:"count"`
	Threshold       int           `json:"threshold"`
	WindowSeconds   int           `json:"window_seconds"`
	FailureRatio    float64       `json:"failure_ratio,omitempty"`
	MinCalls        int           `json:"min_calls,omitempty"`
	MinInstances    int           `json:"min_instances,omitempty"`
	NoSuccess       bool          `json:"no_success"`
	Successes       int           `json:"successes"`
	Rule            string        `json:"rule"`
	Recipients      []string      `json:"recipients"`
	Channels        []string      `json:"channels"`
	EscalateTo      []string      `json:"escalate_to"`
	EscalateSeconds int           `json:"escalate_after_seconds"`
	RetentionHours  int           `json:"event_hub_retention_hours,omitempty"`
	Throttle        *throttleJSON `json:"throttle,omitempty"`
	AckedEpisode    int64         `json:"acknowledged_episode,omitempty"`
	AutoResume      bool          `json:"auto_resume"`
	CooldownSeconds int           `json:"cooldown_seconds"`
	MaxCooldownSecs int           `json:"max_cooldown_seconds,omitempty"`
	EventHub        string        `json:"event_hub,omitempty"`
	Streak          int           `json:"trips_in_a_row"`
	Shadow          bool          `json:"shadow"`
	Queue           string        `json:"queue,omitempty"`
	ParkingQueue    string        `json:"parking_queue,omitempty"`
	TrialAt         *time.Time    `json:"next_trial_at,omitempty"`
	ChangedAt       time.Time     `json:"changed_at"`
	Reason          string        `json:"reason"`
	Applying        bool          `json:"applying"`
	ApplyError      string        `json:"apply_error,omitempty"`
	ApplyRetryAt    *time.Time    `json:"apply_retry_at,omitempty"`
	CountingSince   time.Time     `json:"counting_since"`
	Drift           string        `json:"drift,omitempty"`
	DriftSince      *time.Time    `json:"drift_since,omitempty"`
	Flips           []flipJSON    `json:"flips,omitempty"`
	// Errors group what failed in the window before the trip (trigger
	// off) or the window now; only a single circuit's answer has them.
	Errors      []errorGroupJSON `json:"errors,omitempty"`
	ErrorsOther int              `json:"errors_other,omitempty"`
}

type errorGroupJSON struct {
	Example   string    `json:"example"`
	Count     int       `json:"count"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	Instances []string  `json:"instances"`
	TraceIDs  []string  `json:"trace_ids,omitempty"`
	Links     []string  `json:"links,omitempty"` // for each of TraceIDs, when the app names its Application Insights
}

type flipJSON struct {
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

func toJSON(c circuit.Circuit, n circuit.Counts) circuitJSON {
	j := circuitJSON{App: c.AppID, Function: c.Function, State: c.State.String(), Episode: c.Episode, Count: n.Counted, CountingSince: n.Since,
		FailureRatio: c.Rule.Ratio, MinCalls: c.Rule.MinCalls, NoSuccess: c.Rule.NoSuccess, MinInstances: c.Rule.MinInstances, Successes: n.Successes, Rule: c.RuleText(),
		ApplyError: c.ApplyError,
		Threshold:  c.Threshold, WindowSeconds: int(c.Window / time.Second), Recipients: c.Recipients, Channels: c.Channels, AckedEpisode: c.AckedEpisode,
		EscalateTo: c.Escalate.To, EscalateSeconds: int(c.Escalate.After / time.Second), RetentionHours: int(c.HubRetention / time.Hour),
		AutoResume: c.Policy.AutoResume, CooldownSeconds: int(c.Policy.Cooldown / time.Second), MaxCooldownSecs: int(c.Policy.MaxCooldown / time.Second), EventHub: c.EventHub,
		ChangedAt: c.ChangedAt, Reason: c.Reason, Applying: c.Pending(), Drift: c.Drift, Queue: c.Queue, ParkingQueue: c.Parking, Throttle: throttleOf(c)}
	if j.Channels == nil {
		j.Channels = []string{}
	}
	if j.EscalateTo == nil {
		j.EscalateTo = []string{}
	}
	if j.Recipients == nil {
		j.Recipients = []string{}
	}
	if !c.DriftSince.IsZero() {
		j.DriftSince = &c.DriftSince
	}
	if c.ApplyError != "" {
		j.ApplyRetryAt = &c.ApplyRetryAt
	}
	j.Streak, j.Shadow = c.Streak, c.Shadow
	if at := c.TrialAt(); !at.IsZero() {
		j.TrialAt = &at
	}
	return j
}

// apiCircuitList lists the circuits, optionally of one app or state, with
// their failures in the window now.
func (s *CircuitPages) apiCircuitList(c echo.Context) error {
	all, err := s.Circuits.List(c.Request().Context())
	if err != nil {
		return err
	}
	cs := filterCircuits(all, c.QueryParam("app"), c.QueryParam("state"), c.QueryParam("q"))
	counts, err := s.Counter.Counts(c.Request().Context(), cs)
	if err != nil {
		return err
	}
	out := make([]circuitJSON, len(cs))
	for i, ci := range cs {
		out[i] = toJSON(ci, counts[ci.ID()])
	}
	return c.JSON(http.StatusOK, map[string]any{"circuits": out})
}

// apiCircuitShow returns one circuit with its last 20 flips.
func (s *CircuitPages) apiCircuitShow(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	return s.circuitJSONResponse(c, http.StatusOK, ci)
}

func (s *CircuitPages) circuitJSONResponse(c echo.Context, status int, ci circuit.Circuit) error {
	ctx := c.Request().Context()
	counts, err := s.Counter.Counts(ctx, []circuit.Circuit{ci})
	if err != nil {
		return err
	}
	flips, err := s.Circuits.Flips(ctx, ci.AppID, ci.Function, 20)
	if err != nil {
		return err
	}
	j := toJSON(ci, counts[ci.ID()])
	if groups, other, _, err := s.Samples.OfCircuit(ctx, ci, s.Now(), maxErrorGroups); err == nil {
		j.ErrorsOther = other
		app := s.appOfTraces(ctx, ci.AppID, groups)
		for _, g := range groups {
			j.Errors = append(j.Errors, toErrorGroupJSON(g, app))
		}
	}
	for _, f := range flips {
		j.Flips = append(j.Flips, toFlipJSON(f))
	}
	return c.JSON(status, j)
}

func toFlipJSON(f circuit.Flip) flipJSON {
	return flipJSON{Episode: f.Episode, From: f.From.String(), To: f.To.String(), At: f.At, Actor: f.Actor,
		Count: f.Count, Calls: f.Calls, Since: f.Since, Threshold: f.Threshold, WindowSeconds: int(f.Window / time.Second), Reason: f.Reason}
}

func toErrorGroupJSON(g errortexts.Group, app circuit.App) errorGroupJSON {
	return errorGroupJSON{Example: g.Text(), Count: g.Count, First: g.First, Last: g.Last, Instances: g.Sources, TraceIDs: g.Traces, Links: traceLinks(g, app)}
}

// throttleJSON is a circuit's throttle stage in the API.
type throttleJSON struct {
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

func throttleOf(c circuit.Circuit) *throttleJSON {
	if !c.Throttles() {
		return nil
	}
	return &throttleJSON{Threshold: c.Throttle.Threshold, QuietSeconds: int(c.Throttle.Quiet / time.Second), Kind: c.Throttle.Kind, Ask: c.Throttle.Ask, OnlyThrottle: c.Throttle.OnlyThrottling, Asked: c.Asked && c.State == circuit.Closed, Share: c.ThrottleShare(), Rule: c.ThrottleText(), Released: c.Released, Words: nonNil(c.Throttle.Words)}
}

type settingsJSON struct {
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
}

func (j settingsJSON) settings() circuit.Settings {
	return circuit.Settings{Threshold: j.Threshold, Window: time.Duration(j.WindowSeconds) * time.Second, Recipients: j.Recipients, Channels: j.Channels, EventHub: j.EventHub, Queue: j.Queue, Parking: j.ParkingQueue,
		Escalate: circuit.Escalation{To: j.EscalateTo, After: time.Duration(j.EscalateSeconds) * time.Second}, HubRetention: time.Duration(j.RetentionHours) * time.Hour,
		Throttle: circuit.Throttle{Threshold: j.ThrottleAt, Quiet: time.Duration(j.ThrottleQuiet) * time.Second, Kind: j.ThrottleKind, Ask: j.ThrottleAsk, OnlyThrottling: j.ThrottleOnly, Words: j.ThrottleWords},
		Rule:     circuit.Rule{Ratio: j.FailureRatio, MinCalls: j.MinCalls, NoSuccess: j.NoSuccess, MinInstances: j.MinInstances}, Shadow: j.Shadow,
		Policy: circuit.Policy{AutoResume: j.AutoResume, Cooldown: time.Duration(j.CooldownSeconds) * time.Second, MaxCooldown: time.Duration(j.MaxCooldownSecs) * time.Second}}
}

func bindSettings(c echo.Context) (settingsJSON, error) {
	var j settingsJSON
	if err := c.Bind(&j); err != nil {
		return j, echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"app": "orders", "function": "ProcessOrders", "threshold": 100, "window_seconds": 30}.`)
	}
	return j, nil
}

// apiCircuitCreate creates a closed circuit.
func (s *CircuitPages) apiCircuitCreate(c echo.Context) error {
	j, err := bindSettings(c)
	if err != nil {
		return err
	}
	p, _ := principal(c)
	ci, err := s.Settings.Create(c.Request().Context(), j.App, j.Function, j.settings(), p.Name)
	if err != nil {
		return apiError(c, err)
	}
	created, err := s.Circuits.Get(c.Request().Context(), ci.AppID, ci.Function)
	if err != nil {
		return err
	}
	return s.circuitJSONResponse(c, http.StatusCreated, created)
}

// apiCircuitUpdate replaces a circuit's settings.
func (s *CircuitPages) apiCircuitUpdate(c echo.Context) error {
	j, err := bindSettings(c)
	if err != nil {
		return err
	}
	p, _ := principal(c)
	if _, err := s.Settings.Update(c.Request().Context(), c.Param("app"), c.Param("function"), j.settings(), p.Name); err != nil {
		return apiError(c, err)
	}
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	return s.circuitJSONResponse(c, http.StatusOK, ci)
}

// apiCircuitDelete removes a closed circuit.
func (s *CircuitPages) apiCircuitDelete(c echo.Context) error {
	p, _ := principal(c)
	if err := s.Settings.Delete(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name); err != nil {
		return apiError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// apiCircuitAction trips or resumes a circuit.
func (s *CircuitPages) apiCircuitAction(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		var body struct {
			Reason string `json:"reason"`
		}
		_ = c.Bind(&body) // the reason is optional
		p, _ := principal(c)
		ctx := c.Request().Context()
		var err error
		if action == "trip" {
			_, err = s.Switch.Trip(ctx, c.Param("app"), c.Param("function"), p.Name, body.Reason)
		} else {
			_, err = s.Switch.Resume(ctx, c.Param("app"), c.Param("function"), p.Name, body.Reason)
		}
		if err != nil {
			return apiError(c, err)
		}
		ci, err := s.circuitOf(c)
		if err != nil {
			return err
		}
		return s.circuitJSONResponse(c, http.StatusOK, ci)
	}
}

// apiError maps the service's errors to statuses: 422 with a message per
// field for invalid settings, 404, 409.
func apiError(c echo.Context, err error) error {
	var v circuit.ValidationError
	switch {
	case errors.As(err, &v):
		fields := map[string]string{}
		for _, f := range v {
			fields[f.Field] = f.Message
		}
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the circuit's settings are not valid", "fields": fields})
	case errors.Is(err, circuit.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, "There is no such circuit.")
	case errors.Is(err, circuit.ErrExists), errors.Is(err, circuit.ErrStillOpen), errors.Is(err, circuit.ErrSwitching), errors.Is(err, circuit.ErrAlreadyOpen),
		errors.Is(err, circuit.ErrNotOpen), errors.Is(err, circuit.ErrConflictRetries), errors.Is(err, circuit.ErrNothingToAcknowledge):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	return err
}
