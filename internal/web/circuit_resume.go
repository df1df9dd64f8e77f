package web

import "github.com/labstack/echo/v4"

// circuitResume switches a circuit's trigger back on.
func (s *SwitchPages) circuitResume(c echo.Context) error {
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
func (s *SwitchPages) circuitAcknowledge(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Breakers.Acknowledge(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, ci, err, "acknowledged")
}

// circuitThrottle applies the throttle a circuit asked about (its
// throttle stage asks first), as its Apply link does.
func (s *SwitchPages) circuitThrottle(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Breakers.ApplyThrottle(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, ci, err, "throttled: concurrency lowered")
}

// apiCircuitAcknowledge is circuitAcknowledge for the API.
func (s *SwitchPages) apiCircuitAcknowledge(c echo.Context) error {
	p, _ := principal(c)
	if _, err := s.Breakers.Acknowledge(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name); err != nil {
		return apiError(c, err)
	}
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	return s.pages.circuitJSONResponse(c, 200, ci)
}
