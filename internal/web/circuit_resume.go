package web

import "github.com/labstack/echo/v4"

// circuitResume switches a circuit's trigger back on.
func (s *CircuitPages) circuitResume(c echo.Context) error {
	p, _ := principal(c)
	cur, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	ci, replayed, err := s.resumeAs(c.Request().Context(), c.FormValue("from"), cur, p.Name, c.FormValue("reason"), nil)
	if replayed != "" {
		return s.afterAction(c, ci, err, "resumed: "+replayed)
	}
	return s.afterAction(c, ci, err, "resumed")
}

// circuitAcknowledge stops the reminders of an open circuit's episode.
func (s *CircuitPages) circuitAcknowledge(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Switch.Acknowledge(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, ci, err, "acknowledged")
}

// circuitThrottle applies the throttle a circuit asked about (its
// throttle stage asks first), as its Apply link does.
func (s *CircuitPages) circuitThrottle(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Switch.ApplyThrottle(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, ci, err, "throttled: concurrency lowered")
}

// apiCircuitAcknowledge is circuitAcknowledge for the API.
func (s *CircuitPages) apiCircuitAcknowledge(c echo.Context) error {
	p, _ := principal(c)
	if _, err := s.Switch.Acknowledge(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name); err != nil {
		return apiError(c, err)
	}
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	return s.circuitJSONResponse(c, 200, ci)
}
