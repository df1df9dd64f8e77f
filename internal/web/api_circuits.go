package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
)

// The JSON API for circuits (docs/openapi.yaml). Scripts authenticate with
// an API token (Authorization: Bearer fbt_...); browsers may use their
// session, sending the CSRF token in X-CSRF-Token for changes.

func toJSON(c circuit.Circuit, n circuit.Counts) apiwire.Circuit {
	j := apiwire.Circuit{Spec: c.Settings.Spec(), App: c.AppID, Function: c.Function, State: c.State.String(), Episode: c.Episode, Count: n.Counted, CountingSince: n.Since,
		Successes: n.Successes, Rule: c.RuleText(), ApplyError: c.ApplyError, AckedEpisode: c.AckedEpisode, Streak: c.Streak,
		ChangedAt: c.ChangedAt, Reason: c.Reason, Applying: c.Pending(), Drift: c.Drift, Throttle: throttleOf(c)}
	if !c.DriftSince.IsZero() {
		j.DriftSince = &c.DriftSince
	}
	if c.ApplyError != "" {
		j.ApplyRetryAt = &c.ApplyRetryAt
	}
	if at := c.TrialAt(); !at.IsZero() {
		j.TrialAt = &at
	}
	if !c.PauseUntil.IsZero() {
		j.PauseUntil = &c.PauseUntil
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
	owners, err := s.owners(c)
	if err != nil {
		return err
	}
	cs := filterCircuits(scopeOf(c).Circuits(owners, all), c.QueryParam("app"), c.QueryParam("state"), c.QueryParam("q"))
	counts, err := s.Breakers.Counts(c.Request().Context(), cs)
	if err != nil {
		return err
	}
	out := make([]apiwire.Circuit, len(cs))
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
	counts, err := s.Breakers.Counts(ctx, []circuit.Circuit{ci})
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
	if p := s.probeOf(ctx, ci, s.Now()); p != nil {
		j.Probe = &apiwire.Probe{Waits: p.Waits, InARow: p.InARow, Answers: []apiwire.ProbeAnswer{}}
		for _, a := range p.Heard {
			j.Probe.Answers = append(j.Probe.Answers, apiwire.ProbeAnswer{At: a.At, Good: a.Good, Said: a.Said, TookMS: a.Took.Milliseconds()})
		}
	}
	return c.JSON(status, j)
}

func toFlipJSON(f circuit.Flip) apiwire.Flip {
	return apiwire.Flip{Episode: f.Episode, From: f.From.String(), To: f.To.String(), At: f.At, Actor: f.Actor,
		Count: f.Count, Calls: f.Calls, Since: f.Since, Threshold: f.Threshold, WindowSeconds: int(f.Window / time.Second), Reason: f.Reason}
}

func toErrorGroupJSON(g errortexts.Group, app circuit.App) apiwire.ErrorGroup {
	return apiwire.ErrorGroup{Example: g.Text(), Count: g.Count, First: g.First, Last: g.Last, Instances: g.Sources, TraceIDs: g.Traces, Links: traceLinks(g, app)}
}

func throttleOf(c circuit.Circuit) *apiwire.Throttle {
	if !c.Throttles() {
		return nil
	}
	return &apiwire.Throttle{Threshold: c.Throttle.Threshold, QuietSeconds: int(c.Throttle.Quiet / time.Second), Kind: c.Throttle.Kind, Ask: c.Throttle.Ask, OnlyThrottle: c.Throttle.OnlyThrottling, Asked: c.Asked && c.State == circuit.Closed, Share: c.ThrottleShare(), Rule: c.ThrottleText(), Released: c.Released, Words: nonNil(c.Throttle.Words)}
}

func bindSettings(c echo.Context) (apiwire.CircuitSettings, error) {
	var j apiwire.CircuitSettings
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
	ci, err := s.Breakers.Create(c.Request().Context(), j.App, j.Function, j.Settings(), p.Name)
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
	if _, err := s.Breakers.Update(c.Request().Context(), c.Param("app"), c.Param("function"), j.Settings(), p.Name); err != nil {
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
	if err := s.Breakers.Delete(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name); err != nil {
		return apiError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
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
