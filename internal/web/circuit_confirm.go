package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/throttle"
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
			m.Cost, m.Lower = s.switchCost(c.Request().Context(), ci)
		}
		if action == "resume" {
			m.Host = s.hostPanel(c.Request().Context(), ci)
			m.SetAside = s.functionSetAside(c, ci.AppID, ci.Function)
		}
		return render(c, http.StatusOK, views.ConfirmPage(m))
	}
}

// switchCost says what switching ci's trigger costs its app, naming the
// app's other functions when they can be listed within 5 s, and what
// lowering its concurrency instead would write, when ARM lists the
// function's trigger and the app's settings in that time.
func (s *CircuitPages) switchCost(ctx context.Context, ci circuit.Circuit) (string, []string) {
	app, err := s.Apps.Get(ctx, ci.AppID)
	if err != nil {
		return "", nil
	}
	var others []string
	if s.Inspector != nil && app.Switch == circuit.SwitchARM {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if in, err := s.Inspector.Inspect(lctx, app); err == nil {
			names, lower := throttlePlan(in, ci.Function)
			return app.SwitchCost(ci.Function, names), lower
		}
	}
	if s.FunctionLister != nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if fns, err := s.FunctionLister.Functions(lctx, app); err == nil {
			others = fns // nil where the switch cannot list them (local apps)
		}
	}
	return app.SwitchCost(ci.Function, others), nil
}

// throttlePlan is the app's function names, and the lines of what
// lowering function's concurrency to a quarter would write: none when the
// app's settings could not be read (a plan from defaults could raise
// what the app set).
func throttlePlan(in fleet.Inspection, function string) ([]string, []string) {
	names := []string{}
	byKind := map[string][]string{}
	kind := ""
	for _, f := range in.Functions {
		names = append(names, f.Name)
		byKind[f.Trigger.Kind] = append(byKind[f.Trigger.Kind], f.Name)
		if f.Name == function {
			kind = f.Trigger.Kind
		}
	}
	if in.Settings == nil || kind == "" {
		return names, nil
	}
	p := throttle.Lower(throttle.App{Settings: in.Settings, Functions: byKind}, function, kind, 0.25)
	return names, strings.Split(p.Text(), "\n")
}
