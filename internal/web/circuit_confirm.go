package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/throttle"
	"github.com/fusebox/fusebox/internal/views"
)

// circuitConfirm asks before a trip or resume: a link never acts, only the
// form it leads to does.
func (s *SwitchPages) circuitConfirm(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ci, err := s.circuitOf(c)
		if err != nil {
			return err
		}
		if (action == "trip") == ci.State.TriggerOff() {
			return c.Redirect(http.StatusSeeOther, circuitHref(ci)) // nothing to confirm any more
		}
		counts, err := s.Breakers.Counts(c.Request().Context(), []circuit.Circuit{ci})
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
			if ci.HubRetention > 0 {
				m.Retention = spoken.Duration(ci.HubRetention)
				m.AskExpiry = s.Config.PauseExpiry == "warn"
			}
			if f, ok := s.hosts.forecastOf(c.Request().Context(), ci, time.Hour); ok && f.Known {
				m.PauseForecast = "An hour's pause: " + f.Words()
			}
		}
		if action == "resume" {
			m.Host = s.hosts.hostPanel(c.Request().Context(), ci)
			m.SetAside = s.hosts.functionSetAside(c, ci.AppID, ci.Function)
			m.Replay = s.replayPanel(c.Request().Context(), ci)
		}
		return render(c, http.StatusOK, views.ConfirmPage(m))
	}
}

// switchCost says what switching ci's trigger costs its app, naming the
// app's other functions when they can be listed within 5 s, and what
// lowering its concurrency instead would write, when the app's settings
// (and, on App Service, the function's trigger) are read in that time.
func (s *SwitchPages) switchCost(ctx context.Context, ci circuit.Circuit) (string, []string) {
	app, err := s.Apps.Get(ctx, ci.AppID)
	if err != nil {
		return "", nil
	}
	if names, lower, ok := s.inspectedPlan(ctx, app, ci); ok {
		return app.SwitchCost(ci.Function, names), lower
	}
	var others []string
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if fns, err := s.Switches.Functions(lctx, app); err == nil {
		others = fns // nil where the switch cannot list them (local apps)
	}
	return app.SwitchCost(ci.Function, others), s.links.throttlePlanOf(ctx, app, ci)
}

// inspectedPlan is, for an App Service app ARM inspects within 5 s, the
// app's function names and the plan from the function's own trigger and
// the app's settings; false when it could not be inspected.
func (s *SwitchPages) inspectedPlan(ctx context.Context, app circuit.App, ci circuit.Circuit) ([]string, []string, bool) {
	if s.inspections == nil || app.Switch != circuit.SwitchARM {
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	in, err := s.inspections.Inspect(ctx, app)
	if err != nil {
		return nil, nil, false
	}
	names, lower := throttlePlan(in, ci.Function, ci.ThrottleKind())
	return names, lower, true
}

// circuitThrottlePlan is the circuit page's part that says what its
// throttle would write if it fired now, and what writing it costs: the
// plan an operator sees before any throttle is applied on its own.
func (s *SwitchPages) circuitThrottlePlan(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	if !ci.Throttles() {
		return echo.NewHTTPError(http.StatusNotFound, "This circuit has no throttle stage.")
	}
	ctx := c.Request().Context()
	app, err := s.Apps.Get(ctx, ci.AppID)
	if err != nil {
		return err
	}
	var m views.ThrottlePlan
	if names, lower, ok := s.inspectedPlan(ctx, app, ci); ok {
		m.Lines, m.Cost = lower, app.SwitchCost(ci.Function, names)
	} else {
		m.Lines, m.Cost = s.links.throttlePlanOf(ctx, app, ci), app.SwitchCost(ci.Function, nil)
	}
	return render(c, http.StatusOK, views.ThrottlePlanPart(m))
}

// throttlePlan is the app's function names, and the lines of what
// lowering function's concurrency to a quarter would write: none when the
// app's settings could not be read (a plan from defaults could raise
// what the app set). The trigger kind is the circuit's (kind) where it
// names one, as its throttle will use, else the function's as ARM lists it.
func throttlePlan(in fleet.Inspection, function, kind string) ([]string, []string) {
	names := []string{}
	byKind := map[string][]string{}
	for _, f := range in.Functions {
		names = append(names, f.Name)
		byKind[f.Trigger.Kind] = append(byKind[f.Trigger.Kind], f.Name)
		if f.Name == function && kind == "" {
			kind = f.Trigger.Kind
		}
	}
	if in.Settings == nil || kind == "" {
		return names, nil
	}
	p := throttle.Lower(throttle.App{Settings: in.Settings, Functions: byKind}, function, kind, 0.25)
	return names, strings.Split(p.Text(), "\n")
}
