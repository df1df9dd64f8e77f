package web

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/funcapp"
)

func toAppJSON(a circuit.App) apiwire.App {
	return apiwire.App{ID: a.ID, Team: a.Team, DisplayName: a.DisplayName, Switch: string(a.Switch), Subscription: a.SubscriptionID, ResourceGroup: a.ResourceGroup,
		Site: a.Site, Slot: a.Slot, LocalSettings: a.LocalSettings, Linux: a.Linux, GuardrailMax: a.Guardrail.MaxOff,
		GuardrailShare: a.Guardrail.MaxShare * 100, HostID: a.HostID, InsightsAppID: a.InsightsAppID, SetAsideLimit: a.SetAsideLimit, ResumeFrom: a.ResumeFrom, Channels: nonNil(a.Channels),
		EscalateTo: nonNil(a.Escalate.To), EscalateAfter: int(a.Escalate.After / time.Second),
		Hosting: a.Hosting.Plan, HostStorageSet: a.HostStorage != "", EventHubsSet: a.EventHubs != ""}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func bindApp(c echo.Context) (apiwire.AppInput, error) {
	var in apiwire.AppInput
	if err := c.Bind(&in); err != nil {
		return in, echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"id": "orders-prod", "switch": "arm", "subscription": "…", "resource_group": "orders", "site": "func-orders"}.`)
	}
	return in, nil
}

func appEscalation(in apiwire.AppInput) circuit.Escalation {
	return circuit.Escalation{To: in.EscalateTo, After: time.Duration(in.EscalateAfter) * time.Second}
}

func appHost(in apiwire.AppInput) funcapp.HostChange {
	limit := ""
	if in.SetAsideLimit != 0 {
		limit = strconv.Itoa(in.SetAsideLimit)
	}
	return funcapp.HostChange{HostID: in.HostID, HostStorage: in.HostStorage, EventHubs: in.EventHubs,
		ClearHost: in.ClearHostStorage, ClearHubs: in.ClearEventHubs, SetAsideLimit: limit, InsightsAppID: in.InsightsAppID, ResumeFrom: in.ResumeFrom}
}

func appGuardrail(in apiwire.AppInput) circuit.Guardrail {
	return circuit.Guardrail{MaxOff: in.GuardrailMax, MaxShare: in.GuardrailShare / 100}
}

// apiAppList lists the registered apps, by id.
func (s *AppPages) apiAppList(c echo.Context) error {
	apps, err := s.Apps.List(c.Request().Context())
	if err != nil {
		return err
	}
	apps = scopeOf(c).Apps(apps)
	slices.SortFunc(apps, func(a, b circuit.App) int { return cmp.Compare(a.ID, b.ID) })
	out := make([]apiwire.App, len(apps))
	for i, a := range apps {
		out[i] = toAppJSON(a)
	}
	return c.JSON(http.StatusOK, out)
}

// apiAppShow is one app.
func (s *AppPages) apiAppShow(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAppJSON(app))
}

// apiAppCreate registers an app, as the Register form does; the answer
// carries its failure-reporting key, this once.
func (s *AppPages) apiAppCreate(c echo.Context) error {
	in, err := bindApp(c)
	if err != nil {
		return err
	}
	app := circuit.App{ID: in.ID, DisplayName: in.DisplayName, Switch: circuit.SwitchKind(in.Switch), SubscriptionID: in.Subscription,
		ResourceGroup: in.ResourceGroup, Site: in.Site, Slot: in.Slot, LocalSettings: in.LocalSettings, Linux: in.Linux,
		Guardrail: appGuardrail(in), Channels: in.Channels, Escalate: appEscalation(in), HostStorage: in.HostStorage, EventHubs: in.EventHubs, HostID: in.HostID, InsightsAppID: in.InsightsAppID, SetAsideLimit: in.SetAsideLimit,
		Team: cmp.Or(in.Team, scopeOf(c).DefaultTeam())}
	p, _ := principal(c)
	reg, err := s.Registry.Register(c.Request().Context(), app, p.Name)
	if err != nil {
		return apiAppError(c, err)
	}
	return c.JSON(http.StatusCreated, map[string]any{"app": toAppJSON(reg.App), "key": reg.Key, "note": reg.Note})
}

// apiAppUpdate changes an app's settings. Where its switch writes is not
// a setting: a body that moves it is refused, field by field.
func (s *AppPages) apiAppUpdate(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	in, err := bindApp(c)
	if err != nil {
		return err
	}
	var moved circuit.ValidationError
	for _, f := range []struct{ field, given, have string }{
		{"id", in.ID, app.ID}, {"switch", in.Switch, string(app.Switch)}, {"subscription", in.Subscription, app.SubscriptionID},
		{"resource_group", in.ResourceGroup, app.ResourceGroup}, {"site", in.Site, app.Site}, {"slot", in.Slot, app.Slot},
		{"local_settings", in.LocalSettings, app.LocalSettings},
	} {
		if f.given != f.have {
			moved = append(moved, circuit.FieldError{Field: f.field, Message: "an app's place cannot change: register the new place as another app"})
		}
	}
	if len(moved) > 0 {
		return apiAppError(c, moved)
	}
	set := funcapp.Settings{DisplayName: in.DisplayName, Linux: in.Linux,
		Guardrail: appGuardrail(in), Channels: in.Channels, Escalate: appEscalation(in), Host: appHost(in)}
	if in.Team != "" && in.Team != app.Team {
		// Moving needs the operator role on both teams: require checked
		// this one, the registry checks the other.
		set.Team = &in.Team
	}
	p, _ := principal(c)
	_, err = s.Registry.Update(c.Request().Context(), app, set, p.Name)
	if err != nil {
		return apiAppError(c, err)
	}
	return s.apiAppShow(c)
}

func apiAppError(c echo.Context, err error) error {
	var v circuit.ValidationError
	if errors.As(err, &v) {
		fields := map[string]string{}
		for _, f := range v {
			fields[f.Field] = f.Message
		}
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the app's settings are not valid", "fields": fields})
	}
	return err
}
