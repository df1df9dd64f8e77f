package web

import (
	"cmp"
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/views"
)

// functionsTimeout bounds ARM's listing of one app's functions.
const functionsTimeout = 15 * time.Second

// appFunctions lists an app's functions with their triggers as ARM has
// them, which are guarded, which event-driven ones are not, and the
// circuits whose function is gone.
func (s *AppPages) appFunctions(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	m := views.AppFunctions{Page: s.page(c, "Functions", "apps"), AppID: app.ID, AppName: cmp.Or(app.DisplayName, app.ID), CanAct: scopeOf(c).ActsAnywhere()}
	switch {
	case app.Switch != circuit.SwitchARM:
		m.Off = "Fusebox lists functions through Azure Resource Manager; this app is switched another way."
	case s.triggerLists == nil:
		m.Off = "Fusebox has no Azure identity, so it cannot list this app's functions."
	}
	if m.Off != "" {
		return render(c, http.StatusOK, views.AppFunctionsPage(m))
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), functionsTimeout)
	defer cancel()
	fns, err := s.triggerLists.Functions(ctx, app)
	if err != nil {
		m.Off = "ARM did not list the functions: " + err.Error()
		return render(c, http.StatusOK, views.AppFunctionsPage(m))
	}
	cs, err := s.Circuits.Recent(c.Request().Context(), listFreshness)
	if err != nil {
		return err
	}
	guarded := map[string]bool{}
	for _, ci := range cs {
		if ci.AppID == app.ID {
			guarded[ci.Function] = true
		}
	}
	listed := map[string]bool{}
	for _, f := range fns {
		listed[f.Name] = true
		r := views.FunctionRow{Name: f.Name, Kind: f.Trigger.Kind, Problem: f.Problem, EventDriven: fleet.EventDriven(f.Trigger.Kind), Circuit: guarded[f.Name]}
		for _, d := range f.Trigger.Details {
			fd := views.FunctionDetail{Name: d.Name, Value: d.Value, Note: d.Unresolved}
			if d.Setting != "" && d.Value == "" && d.Unresolved == "" {
				fd.Note = "from setting " + d.Setting
			}
			r.Details = append(r.Details, fd)
		}
		m.Rows = append(m.Rows, r)
	}
	for _, ci := range cs {
		if ci.AppID == app.ID && !listed[ci.Function] {
			m.Gone = append(m.Gone, ci.Function)
		}
	}
	return render(c, http.StatusOK, views.AppFunctionsPage(m))
}
