package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
)

// circuitTrip switches a circuit's trigger off by hand.
func (s *CircuitPages) circuitTrip(c echo.Context) error {
	p, _ := principal(c)
	ci, err := s.Switch.Trip(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name, c.FormValue("reason"))
	return s.afterAction(c, ci, err, "tripped")
}

// afterAction sends the browser back to the circuit with a flash, or
// explains why nothing happened.
func (s *CircuitPages) afterAction(c echo.Context, ci circuit.Circuit, err error, flash string) error {
	switch {
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
