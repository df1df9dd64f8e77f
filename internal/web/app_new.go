package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/views"
)

// appNew shows the form that registers a function app.
func (s *AppPages) appNew(c echo.Context) error {
	// Discover's Register link fills in where the site is, as ARM said.
	q := func(k string) string { return strings.TrimSpace(c.QueryParam(k)) }
	tc, err := s.teamChoice(c, "", "admins' alone")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AppFormPage(views.AppForm{Page: s.page(c, "Register an app", "apps"), Switch: "arm", Team: tc,
		Subscription: q("subscription"), ResourceGroup: q("resource_group"), Site: q("site"), Slot: q("slot"), Name: q("site"), Linux: q("linux") == "on"}))
}

// appCreate registers an app and shows its new key once.
func (s *AppPages) appCreate(c echo.Context) error {
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	m := views.AppForm{ID: v("id"), Name: v("name"), Switch: v("switch"), Subscription: v("subscription"), ResourceGroup: v("resource_group"),
		Site: v("site"), Slot: v("slot"), LocalSettings: v("local_settings"), Linux: c.FormValue("linux") == "on",
		GuardrailMax: v("guardrail_max"), GuardrailShare: strings.TrimSuffix(v("guardrail_share"), "%"), Channels: v("channels"),
		EscalateTo: v("escalate_to"), EscalateAfter: v("escalate_after"),
		HostStorage: v("host_storage"), HostID: v("host_id"), EventHubs: v("event_hubs")}
	app := circuit.App{ID: m.ID, DisplayName: m.Name, Switch: circuit.SwitchKind(m.Switch), SubscriptionID: m.Subscription,
		ResourceGroup: m.ResourceGroup, Site: m.Site, Slot: m.Slot, LocalSettings: m.LocalSettings, Linux: m.Linux, Channels: splitComma(m.Channels),
		HostStorage: m.HostStorage, HostID: m.HostID, EventHubs: m.EventHubs, Team: v("team")}
	if !teamNamed(c, app.Team) {
		app.Team = scopeOf(c).DefaultTeam()
	}
	g, err := funcapp.ParseGuardrail(m.GuardrailMax, m.GuardrailShare)
	app.Guardrail = g
	app.Escalate.To = splitComma(m.EscalateTo)
	if m.EscalateAfter != "" && err == nil {
		if app.Escalate.After, err = time.ParseDuration(m.EscalateAfter); err != nil {
			err = circuit.ValidationError{{Field: "escalate_after", Message: "must be a duration such as 30m, or empty for no escalation"}}
		}
	}
	var reg funcapp.Registered
	if err == nil {
		p, _ := principal(c)
		reg, err = s.Registry.Register(c.Request().Context(), app, p.Name)
	}
	if err != nil {
		var ve circuit.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		m.Errors = map[string]string{}
		for _, f := range ve {
			m.Errors[f.Field] = f.Message
		}
		m.Page = s.page(c, "Register an app", "apps")
		if m.Team, err = s.teamChoice(c, app.Team, "admins' alone"); err != nil {
			return err
		}
		return render(c, http.StatusUnprocessableEntity, views.AppFormPage(m))
	}
	return s.showKey(c, reg.App, reg.Key, reg.Note)
}

// appKey replaces an app's failure-reporting key.
func (s *AppPages) appKey(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	p, _ := principal(c)
	key, err := s.Registry.ReplaceKey(c.Request().Context(), app, p.Name)
	if err != nil {
		return err
	}
	return s.showKey(c, app, key, "")
}

// showKey shows an app's new key, this once.
func (s *AppPages) showKey(c echo.Context, app circuit.App, key, note string) error {
	return render(c, http.StatusOK, views.AppKeyPage(views.AppKey{Page: s.page(c, "Key of "+app.ID, "apps"), AppID: app.ID, Key: key, URL: s.Config.BaseURL.String(),
		Hosting: hostingText(app.Hosting), Note: note}))
}

// hostingText says how an app is hosted and what that means for a trip.
func hostingText(h circuit.Hosting) string {
	switch h.Plan {
	case circuit.PlanFlex:
		if h.RollingUpdates {
			return "Flex Consumption, rolling updates on: a trip's settings change rolls out instance by instance"
		}
		return "Flex Consumption, rolling updates off: every trip restarts all instances at once (set the site update strategy to RollingUpdate to avoid it)"
	case circuit.PlanContainerApps:
		return "Functions in a Container Apps environment (Microsoft.Web/sites): app settings, as on App Service"
	case circuit.PlanAppService:
		return "App Service, Premium or Consumption: a trip's settings change restarts the app"
	}
	return ""
}
