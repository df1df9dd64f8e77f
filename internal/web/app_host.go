package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/views"
)

func (s *AppPages) appOf(c echo.Context) (circuit.App, error) {
	app, err := s.Apps.Get(c.Request().Context(), c.Param("app"))
	if errors.Is(err, circuit.ErrNoApp) {
		return circuit.App{}, echo.NewHTTPError(http.StatusNotFound, "There is no such app.")
	}
	return app, err
}

// appHost shows the form that changes what Fusebox reads of an app's own
// storage and hub.
func (s *AppPages) appHost(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AppHostFormPage(views.AppHostForm{Page: s.page(c, "Host insight of "+app.ID, "apps"), AppID: app.ID,
		HostStorageSet: app.HostStorage != "", EventHubsSet: app.EventHubs != "", HostID: app.HostID, InsightsAppID: app.InsightsAppID, SetAsideLimit: limitText(app.SetAsideLimit), ResumeFrom: app.ResumeFrom}))
}

// appHostSave changes them. The secrets are replaced only when given,
// and the audit log says what changed, never what they are.
func (s *AppPages) appHostSave(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	m := views.AppHostForm{AppID: app.ID, HostStorageSet: app.HostStorage != "", EventHubsSet: app.EventHubs != "",
		HostID: strings.TrimSpace(c.FormValue("host_id")), InsightsAppID: strings.TrimSpace(c.FormValue("insights_app_id")), HostStorage: strings.TrimSpace(c.FormValue("host_storage")),
		EventHubs: strings.TrimSpace(c.FormValue("event_hubs")), ClearHost: c.FormValue("clear_host_storage") == "on",
		ClearHubs: c.FormValue("clear_event_hubs") == "on", SetAsideLimit: strings.TrimSpace(c.FormValue("set_aside_limit")), ResumeFrom: c.FormValue("resume_from"), Errors: map[string]string{}}
	p, _ := principal(c)
	_, err = s.Registry.UpdateHost(c.Request().Context(), app, funcapp.HostChange{HostID: m.HostID, HostStorage: m.HostStorage, EventHubs: m.EventHubs,
		ClearHost: m.ClearHost, ClearHubs: m.ClearHubs, SetAsideLimit: m.SetAsideLimit, InsightsAppID: m.InsightsAppID, ResumeFrom: m.ResumeFrom}, p.Name)
	var ve circuit.ValidationError
	if errors.As(err, &ve) {
		for _, f := range ve {
			m.Errors[f.Field] = f.Message
		}
		m.Page = s.page(c, "Host insight of "+app.ID, "apps")
		return render(c, http.StatusUnprocessableEntity, views.AppHostFormPage(m))
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/apps")
}

// limitText shows a set-aside limit in the form: empty for the default.
func limitText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
