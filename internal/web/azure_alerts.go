package web

import (
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/azalerts"
)

// azureAlert takes an Azure Monitor action group's webhook, in the common
// alert schema, at /hooks/azure-monitor/<secret>: an action group's plain
// webhook cannot send a header, so the secret is in the path, compared in
// constant time before the body is read. A wrong secret, or none
// configured, answers as a path that names nothing. The alert is kept and
// shown on the Alerts page; a "Fired" alert trips the circuits that name
// its rule (azalerts.Responder), once: a retry of it changes nothing. The
// answer and the Alerts page say which rule it matched, or why none.
func (s *Intake) azureAlert(c echo.Context) error {
	want := []byte(s.Config.AzureAlertsSecret.Reveal())
	if len(want) == 0 || subtle.ConstantTimeCompare([]byte(c.Param("secret")), want) != 1 {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	return s.takeAlert(c)
}

// azureAlertSecure takes a secure webhook's alert at /hooks/azure-monitor:
// its Entra ID token is verified (signature against the tenant's keys,
// issuer, audience, tenant, life, and the caller's role or application)
// before the body is read.
func (s *Intake) azureAlertSecure(c echo.Context) error {
	if s.AlertTokens == nil {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	err := s.AlertTokens.Verify(c.Request().Context(), c.Request().Header.Get("Authorization"))
	switch {
	case errors.Is(err, azalerts.ErrNoToken), errors.Is(err, azalerts.ErrBadToken):
		return echo.NewHTTPError(http.StatusUnauthorized, "The bearer token is not one Fusebox takes: an action group's secure webhook's, for this app registration and tenant.")
	case err != nil:
		// The tenant's keys could not be read: the sender retries.
		return echo.NewHTTPError(http.StatusServiceUnavailable, "The tenant's signing keys could not be read; try again.").SetInternal(err)
	}
	return s.takeAlert(c)
}

// takeAlert reads, keeps and acts on an alert whose sender was verified.
func (s *Intake) takeAlert(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, azalerts.MaxBody+1))
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The body could not be read.")
	}
	a, err := azalerts.Parse(body)
	var bad azalerts.Error
	if errors.As(err, &bad) {
		return echo.NewHTTPError(http.StatusBadRequest, "Not an alert Fusebox takes: "+bad.Why+".")
	}
	if err != nil {
		return err
	}
	now := s.Now()
	if a.Fired.After(now.Add(azalerts.MaxAhead)) || a.Fired.Before(now.Add(-azalerts.MaxAge)) {
		return echo.NewHTTPError(http.StatusBadRequest, "Not an alert Fusebox takes: it fired at "+a.Fired.Format(time.RFC3339)+", not within the last 31 days (check the sender's clock).")
	}
	added, err := s.Alerts.Add(c.Request().Context(), a, now)
	if err != nil {
		return err
	}
	if !added {
		return c.JSON(http.StatusOK, map[string]string{"status": "received already"})
	}
	// What the alert trips is done even if the sender stops waiting: the
	// row is written, and a retry would find it received already.
	ctx, cancel := detached(c)
	defer cancel()
	out, terr := s.AlertResponder.Respond(ctx, a)
	// The Alerts page says what it matched, or why nothing, as the answer
	// does.
	if err := s.Alerts.SetOutcome(ctx, a, out); err != nil {
		return errors.Join(terr, err)
	}
	if terr != nil {
		// Kept, and what it did trip recorded; a retry finds it received
		// and trips nothing (a circuit resumed since stays resumed). The
		// log says which circuit failed; the Alerts page what it tripped.
		return terr
	}
	return c.JSON(http.StatusAccepted, alertAnswer{Status: "received", ActedOn: nonNil(out.Acted), Matched: out.Rule, Note: out.Note})
}

// alertAnswer is the webhook's answer to an alert it took: what it acted
// on, the rule it matched, and how it matched or why it acted on nothing.
type alertAnswer struct {
	Status  string   `json:"status"`
	ActedOn []string `json:"acted_on"`
	Matched string   `json:"matched_rule,omitempty"`
	Note    string   `json:"note"`
}
