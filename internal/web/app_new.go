package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/views"
)

// appNew shows the form that registers a function app.
func (s *Server) appNew(c echo.Context) error {
	return render(c, http.StatusOK, views.AppFormPage(views.AppForm{Page: s.page(c, "Register an app", "apps"), Switch: "arm"}))
}

// appCreate registers an app and shows its new key once.
func (s *Server) appCreate(c echo.Context) error {
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	m := views.AppForm{ID: v("id"), Name: v("name"), Switch: v("switch"), Subscription: v("subscription"), ResourceGroup: v("resource_group"),
		Site: v("site"), Slot: v("slot"), LocalSettings: v("local_settings"), Linux: c.FormValue("linux") == "on",
		GuardrailMax: v("guardrail_max"), GuardrailShare: strings.TrimSuffix(v("guardrail_share"), "%"), Channels: v("channels"),
		HostStorage: v("host_storage"), HostID: v("host_id"), EventHubs: v("event_hubs")}
	app := circuit.App{ID: m.ID, DisplayName: m.Name, Switch: circuit.SwitchKind(m.Switch), SubscriptionID: m.Subscription,
		ResourceGroup: m.ResourceGroup, Site: m.Site, Slot: m.Slot, LocalSettings: m.LocalSettings, Linux: m.Linux, Channels: splitComma(m.Channels),
		HostStorage: m.HostStorage, HostID: m.HostID, EventHubs: m.EventHubs}
	var parseErrs circuit.ValidationError
	if m.GuardrailMax != "" {
		n, perr := strconv.Atoi(m.GuardrailMax)
		if perr != nil {
			parseErrs = append(parseErrs, circuit.FieldError{Field: "guardrail_max", Message: "must be a whole number of circuits, such as 3"})
		}
		app.Guardrail.MaxOff = n
	}
	if m.GuardrailShare != "" {
		pct, perr := strconv.ParseFloat(strings.TrimSpace(m.GuardrailShare), 64)
		if perr != nil {
			parseErrs = append(parseErrs, circuit.FieldError{Field: "guardrail_share", Message: "must be a percentage, such as 50"})
		}
		app.Guardrail.MaxShare = pct / 100
	}
	err := app.Validate()
	if len(parseErrs) > 0 {
		err = parseErrs
	}
	if err == nil {
		err = s.checkChannels(c.Request().Context(), app.Channels)
	}
	if err == nil {
		if herr := hostinsight.CheckHostStorage(s.Endpoints, app.HostStorage); herr != nil {
			err = circuit.ValidationError{{Field: "host_storage", Message: herr.Error()}}
		} else if eerr := eventhub.Check(s.Endpoints, app.EventHubs); eerr != nil {
			err = circuit.ValidationError{{Field: "event_hubs", Message: eerr.Error()}}
		}
	}
	note := ""
	if err == nil && app.Switch == circuit.SwitchARM && s.Hosting != nil {
		h, derr := s.Hosting.Detect(c.Request().Context(), app)
		switch {
		case errors.Is(derr, armwrite.ErrPermanent):
			err = circuit.ValidationError{{Field: "site", Message: derr.Error()}}
		case derr != nil:
			// ARM could not be asked now: register anyway; the switch
			// reports what it finds on each circuit's page.
			note = "Fusebox could not read the site from ARM to tell how it is hosted (" + derr.Error() + "). It is registered; its circuits' pages show what the switch finds."
		default:
			app.Hosting = h
			app.Linux = app.Linux || h.Linux
		}
	}
	if err == nil && app.Switch == circuit.SwitchLocal {
		where := localsettings.Where{Anywhere: s.Config.Env == config.Development, Root: s.Config.LocalSwitchRoot}
		if _, werr := where.Check(app.LocalSettings); werr != nil {
			err = circuit.ValidationError{{Field: "local_settings", Message: werr.Error()}}
		}
	}
	var key string
	if err == nil {
		// Registered only if the id is free: the write is conditional, so
		// two registrations of one id a moment apart cannot both succeed.
		key, app.APIKeyHash = auth.NewAppKey(app.ID)
		err = s.AppStore.Create(c.Request().Context(), app)
		if errors.Is(err, circuit.ErrConflict) {
			err = circuit.ValidationError{{Field: "id", Message: "an app with this id is registered already"}}
		}
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
		return render(c, http.StatusUnprocessableEntity, views.AppFormPage(m))
	}
	return s.showKey(c, app, key, "registered app", note)
}

// appKey replaces an app's failure-reporting key.
func (s *Server) appKey(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	return s.issueKey(c, app, "replaced app key", "")
}

func (s *Server) issueKey(c echo.Context, app circuit.App, action, note string) error {
	key, hash := auth.NewAppKey(app.ID)
	app.APIKeyHash = hash
	if err := s.AppStore.Put(c.Request().Context(), app); err != nil {
		return err
	}
	s.keys.forget(app.ID) // the old key stops here now, elsewhere within keyTTL
	return s.showKey(c, app, key, action, note)
}

// showKey audits the new key and shows it, this once.
func (s *Server) showKey(c echo.Context, app circuit.App, key, action, note string) error {
	p, _ := principal(c)
	ctx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: action, Target: app.ID, Detail: target(app)}); err != nil {
		return err
	}
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
