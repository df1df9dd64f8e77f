package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/views"
)

// circuitConfirm asks before a trip or resume: a link never acts, only the
// form it leads to does.
func (s *CircuitPages) circuitConfirm(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ci, err := s.circuitOf(c)
		if err != nil {
			return err
		}
		if (action == "trip") == ci.State.TriggerOff() {
			return c.Redirect(http.StatusSeeOther, circuitHref(ci)) // nothing to confirm any more
		}
		counts, err := s.Counter.Counts(c.Request().Context(), []circuit.Circuit{ci})
		if err != nil {
			return err
		}
		apps, err := s.Apps.List(c.Request().Context())
		if err != nil {
			return err
		}
		m := views.Confirm{
			Page: s.page(c, action+" "+ci.Function, "circuits"), Action: action, App: appName(apps, ci.AppID), Function: ci.Function,
			Base: circuitHref(ci), State: ci.State.String(), Count: counts[ci.ID()].Counted, Threshold: ci.Threshold,
		}
		if action == "resume" {
			m.Host = s.hostPanel(c.Request().Context(), ci)
			m.SetAside = s.functionSetAside(c, ci.AppID, ci.Function)
		}
		return render(c, http.StatusOK, views.ConfirmPage(m))
	}
}
