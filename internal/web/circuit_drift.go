package web

import (
	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
)

// circuitDriftAdopt lets the circuit follow a trigger moved outside Fusebox.
func (s *SwitchPages) circuitDriftAdopt(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Breakers.Adopt(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, ci, err, "adopted")
}

// circuitDriftOverride sets the trigger back where the circuit wants it.
func (s *SwitchPages) circuitDriftOverride(c echo.Context) error {
	p, _ := principal(c)
	err := s.Breakers.Override(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, circuit.Circuit{AppID: c.Param("app"), Function: c.Param("function")}, err, "overridden")
}
