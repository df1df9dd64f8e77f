package web

import (
	"net/http"
	"path"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/views"
)

// appList shows the registered function apps.
func (s *Server) appList(c echo.Context) error {
	ctx := c.Request().Context()
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	cs, err := s.Circuits.List(ctx)
	if err != nil {
		return err
	}
	perApp := map[string]int{}
	for _, ci := range cs {
		perApp[ci.AppID]++
	}
	m := views.Apps{Page: s.page(c, "Apps", "apps"), CanAct: canAct(c)}
	for _, a := range apps {
		m.Rows = append(m.Rows, views.AppRow{ID: a.ID, Name: appName(apps, a.ID), Switch: string(a.Switch), Target: target(a),
			Circuits: perApp[a.ID], HasKey: a.APIKeyHash != "", Hosting: hostingText(a.Hosting), Insight: insightText(a)})
	}
	return render(c, http.StatusOK, views.AppsPage(m))
}

func target(a circuit.App) string {
	if a.Switch == circuit.SwitchLocal {
		return a.LocalSettings
	}
	t := path.Join(a.SubscriptionID, a.ResourceGroup, a.Site)
	if a.Slot != "" {
		t += " (slot " + a.Slot + ")"
	}
	return t
}

// insightText says what Fusebox reads of the app's own storage and hub.
func insightText(a circuit.App) string {
	switch {
	case a.HostStorage != "" && a.EventHubs != "":
		return "host insight: its storage and its Event Hubs"
	case a.HostStorage != "":
		return "host insight: its storage"
	}
	return ""
}
