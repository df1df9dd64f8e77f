package web

import (
	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
)

// circuitDriftAdopt lets the circuit follow a trigger moved outside Fusebox.
func (s *CircuitPages) circuitDriftAdopt(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Drift.Adopt(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, ci, err, "adopted")
}

// circuitDriftOverride sets the trigger back where the circuit wants it.
func (s *CircuitPages) circuitDriftOverride(c echo.Context) error {
	p, _ := principal(c)
	err := s.Drift.Override(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name)
	return s.afterAction(c, circuit.Circuit{AppID: c.Param("app"), Function: c.Param("function")}, err, "overridden")
}
