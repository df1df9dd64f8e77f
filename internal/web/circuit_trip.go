package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
)

// circuitTrip switches a circuit's trigger off by hand: until someone
// resumes it, or for the time asked (a pause the evaluator ends).
func (s *SwitchPages) circuitTrip(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.tripOrPause(c, p.Name, c.FormValue("reason"), strings.TrimSpace(c.FormValue("for")), "", c.FormValue("expire_ok") == "on")
	return s.afterAction(c, ci, err, "tripped")
}

// tripOrPause trips, or pauses until (RFC 3339) or for (a duration) a
// time. A pause of an Event Hubs function longer than the hub keeps events
// is refused: the first of those waiting would be gone at its end.
func (s *SwitchPages) tripOrPause(c echo.Context, actor, reason, forText, untilText string, expireOK bool) (circuit.Circuit, error) {
	ctx := c.Request().Context()
	app, function := c.Param("app"), c.Param("function")
	if forText == "" && untilText == "" {
		return s.Breakers.Flip(ctx, app, function, actor, reason, circuit.Tripping)
	}
	now := s.Now()
	var until time.Time
	if forText != "" {
		d, err := time.ParseDuration(forText)
		if err != nil || d <= 0 {
			return circuit.Circuit{}, circuit.ValidationError{{Field: "for", Message: "must be a duration such as 45m or 2h"}}
		}
		until = now.Add(d)
	} else {
		t, err := time.Parse(time.RFC3339, untilText)
		if err != nil {
			return circuit.Circuit{}, circuit.ValidationError{{Field: "until", Message: "must be a time in RFC 3339, such as 2026-12-08T03:00:00Z"}}
		}
		until = t
	}
	if !until.After(now) || until.Sub(now) > circuit.MaxPause {
		return circuit.Circuit{}, circuit.ValidationError{{Field: "for", Message: "a pause ends after now and within 7 days"}}
	}
	ci, err := s.circuitOf(c)
	if err != nil {
		return ci, err
	}
	if f, ok := s.hosts.forecastOf(ctx, ci, until.Sub(now)); ok {
		if msg := s.hosts.expiryRefusal(f, expireOK); msg != "" {
			return ci, circuit.ValidationError{{Field: "for", Message: msg}}
		}
		if f.Expires {
			reason = strings.TrimSpace(reason + " (paused knowing waiting events expire before it ends)")
		}
	}
	return s.Breakers.Flip(ctx, app, function, actor, reason, circuit.PauseUntil(until))
}

// afterAction sends the browser back to the circuit with a flash, or
// explains why nothing happened.
func (s *core) afterAction(c echo.Context, ci circuit.Circuit, err error, flash string) error {
	switch {
	case errors.As(err, new(circuit.ValidationError)):
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "Not paused: "+fieldText(err)+".")
	case errors.Is(err, circuit.ErrAlreadyOpen), errors.Is(err, circuit.ErrNotOpen), errors.Is(err, circuit.ErrNoDrift), errors.Is(err, circuit.ErrConflictRetries), errors.Is(err, circuit.ErrNothingToAcknowledge), errors.Is(err, circuit.ErrNotAsked):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case err != nil:
		if _, nf := s.circuitOf(c); nf != nil {
			return nf
		}
		return err
	}
	s.setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, circuitHref(ci))
}

// fieldText says a validation error's messages, field by field.
func fieldText(err error) string {
	var parts []string
	for f, m := range fieldProblems(err) {
		parts = append(parts, f+" "+m)
	}
	return strings.Join(parts, "; ")
}
