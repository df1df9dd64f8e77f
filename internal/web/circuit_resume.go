package web

import "github.com/labstack/echo/v4"

// circuitResume switches a circuit's trigger back on.
func (s *Server) circuitResume(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Actions.Resume(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name, c.FormValue("reason"))
	return s.afterAction(c, ci, err, "resumed")
}
