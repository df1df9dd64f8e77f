package web

import (
	"context"
	"net/http"
	"time"

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
		if action == "trip" {
			m.Cost = s.switchCost(c.Request().Context(), ci)
		}
		if action == "resume" {
			m.Host = s.hostPanel(c.Request().Context(), ci)
			m.SetAside = s.functionSetAside(c, ci.AppID, ci.Function)
		}
		return render(c, http.StatusOK, views.ConfirmPage(m))
	}
}

// switchCost says what switching ci's trigger costs its app, naming the
// app's other functions when they can be listed within 5 s.
func (s *CircuitPages) switchCost(ctx context.Context, ci circuit.Circuit) string {
	app, err := s.Apps.Get(ctx, ci.AppID)
	if err != nil {
		return ""
	}
	var others []string
	if s.FunctionLister != nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if fns, err := s.FunctionLister.Functions(lctx, app); err == nil {
			others = fns // nil where the switch cannot list them (local apps)
		}
	}
	return app.SwitchCost(ci.Function, others)
}
