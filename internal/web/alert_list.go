package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// alertList shows the alerts Azure Monitor's action groups posted. They
// name Azure resources of any team: the page is admins'.
func (s *OpsPages) alertList(c echo.Context) error {
	as, err := s.Alerts.Recent(c.Request().Context(), s.Now())
	if err != nil {
		return err
	}
	m := views.Alerts{Page: s.page(c, "Alerts", "alerts"), Off: s.Config.AzureAlertsSecret == "" && s.Config.AzureAlertsEntra == nil}
	for _, a := range as {
		m.Rows = append(m.Rows, views.AlertRow{Rule: a.Rule, RuleID: a.RuleID, Severity: a.Severity, Signal: a.Signal, Condition: a.Condition,
			Service: a.Service, Description: a.Description, Targets: a.Targets, Fired: a.Fired, Resolved: a.Resolved, Received: a.At, Tripped: a.Tripped, Note: a.Note})
	}
	return render(c, http.StatusOK, views.AlertsPage(m))
}

// alertJSON is a received alert in the API.
type alertJSON struct {
	ID          string     `json:"id"`
	Rule        string     `json:"rule"`
	RuleID      string     `json:"rule_id,omitempty"`
	Severity    string     `json:"severity,omitempty"`
	Signal      string     `json:"signal,omitempty"`
	Condition   string     `json:"condition"`
	Service     string     `json:"service,omitempty"`
	Targets     []string   `json:"targets"`
	Fired       time.Time  `json:"fired_at"`
	Resolved    *time.Time `json:"resolved_at,omitempty"`
	Description string     `json:"description,omitempty"`
	Received    time.Time  `json:"received_at"`
	Tripped     []string   `json:"acted_on"` // tripped on Fired, tried on Resolved
	Matched     string     `json:"matched_rule,omitempty"`
	Note        string     `json:"note,omitempty"`
}

// apiAlertList lists the received alerts, newest first.
func (s *OpsPages) apiAlertList(c echo.Context) error {
	as, err := s.Alerts.Recent(c.Request().Context(), s.Now())
	if err != nil {
		return err
	}
	out := struct {
		Alerts []alertJSON `json:"alerts"`
	}{Alerts: []alertJSON{}}
	for _, a := range as {
		j := alertJSON{ID: a.ID, Rule: a.Rule, RuleID: a.RuleID, Severity: a.Severity, Signal: a.Signal, Condition: a.Condition, Service: a.Service,
			Targets: nonNil(a.Targets), Fired: a.Fired, Description: a.Description, Received: a.At, Tripped: nonNil(a.Tripped), Matched: a.Matched, Note: a.Note}
		if !a.Resolved.IsZero() {
			j.Resolved = &a.Resolved
		}
		out.Alerts = append(out.Alerts, j)
	}
	return c.JSON(http.StatusOK, out)
}
