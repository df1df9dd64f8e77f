package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/views"
)

func (s *Server) appOf(c echo.Context) (circuit.App, error) {
	app, err := s.AppStore.Get(c.Request().Context(), c.Param("app"))
	if errors.Is(err, storage.ErrNoApp) {
		return circuit.App{}, echo.NewHTTPError(http.StatusNotFound, "There is no such app.")
	}
	return app, err
}

// appHost shows the form that changes what Fusebox reads of an app's own
// storage and hub.
func (s *Server) appHost(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AppHostFormPage(views.AppHostForm{Page: s.page(c, "Host insight of "+app.ID, "apps"), AppID: app.ID,
		HostStorageSet: app.HostStorage != "", EventHubsSet: app.EventHubs != "", HostID: app.HostID, SetAsideLimit: limitText(app.SetAsideLimit)}))
}

// appHostSave changes them. The secrets are replaced only when given,
// and the audit log says what changed, never what they are.
func (s *Server) appHostSave(c echo.Context) error {
	app, err := s.appOf(c)
	if err != nil {
		return err
	}
	m := views.AppHostForm{AppID: app.ID, HostStorageSet: app.HostStorage != "", EventHubsSet: app.EventHubs != "",
		HostID: strings.TrimSpace(c.FormValue("host_id")), HostStorage: strings.TrimSpace(c.FormValue("host_storage")),
		EventHubs: strings.TrimSpace(c.FormValue("event_hubs")), ClearHost: c.FormValue("clear_host_storage") == "on",
		ClearHubs: c.FormValue("clear_event_hubs") == "on", SetAsideLimit: strings.TrimSpace(c.FormValue("set_aside_limit")), Errors: map[string]string{}}
	if err := hostinsight.CheckHostStorage(s.Endpoints, m.HostStorage); err != nil {
		m.Errors["host_storage"] = err.Error()
	}
	if err := eventhub.Check(s.Endpoints, m.EventHubs); err != nil {
		m.Errors["event_hubs"] = err.Error()
	}
	var changed []string
	next := app
	next.HostStorage, changed = replaceSecret(app.HostStorage, m.HostStorage, m.ClearHost, "host storage", changed)
	next.EventHubs, changed = replaceSecret(app.EventHubs, m.EventHubs, m.ClearHubs, "Event Hubs", changed)
	limit := 0
	if m.SetAsideLimit != "" {
		n, err := strconv.Atoi(m.SetAsideLimit)
		if err != nil || n <= 0 {
			m.Errors["set_aside_limit"] = "must be a whole number of messages, or empty for the default"
		}
		limit = n
	}
	if limit != app.SetAsideLimit {
		changed = append(changed, "set-aside limit "+quoteOrNone(m.SetAsideLimit))
		next.SetAsideLimit = limit
	}
	if m.HostID != app.HostID {
		changed = append(changed, "host id "+quoteOrNone(m.HostID))
		next.HostID = m.HostID
	}
	var ve circuit.ValidationError
	if errors.As(next.Validate(), &ve) {
		for _, f := range ve {
			m.Errors[f.Field] = f.Message
		}
	}
	if len(m.Errors) > 0 {
		m.Page = s.page(c, "Host insight of "+app.ID, "apps")
		return render(c, http.StatusUnprocessableEntity, views.AppHostFormPage(m))
	}
	app = next
	if len(changed) == 0 {
		return c.Redirect(http.StatusSeeOther, "/apps")
	}
	if err := s.AppStore.Put(c.Request().Context(), app); err != nil {
		return err
	}
	p, _ := principal(c)
	ctx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "changed host insight", Target: app.ID, Detail: strings.Join(changed, "; ")}); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/apps")
}

// replaceSecret is the new value of a secret setting and a note of what
// happened to it, without the secret.
func replaceSecret(old, typed string, clear bool, name string, changed []string) (string, []string) {
	switch {
	case typed != "":
		return typed, append(changed, name+" replaced")
	case clear && old != "":
		return "", append(changed, name+" cleared")
	}
	return old, changed
}

func quoteOrNone(s string) string {
	if s == "" {
		return "derived"
	}
	return `"` + s + `"`
}

// limitText shows a set-aside limit in the form: empty for the default.
func limitText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
