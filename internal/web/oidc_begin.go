package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/auth"
)

// oidcBegin sends the browser to the OpenID Connect provider. The flow's
// state, nonce and PKCE verifier travel in a signed, short-lived cookie.
func (s *SignIn) oidcBegin(c echo.Context) error {
	if s.OIDC == nil {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	authURL, flow := s.OIDC.Begin(safeNext(c.QueryParam("next")))
	s.setCookie(c, "fusebox_oidc", flow, auth.FlowLifetime)
	return c.Redirect(http.StatusFound, authURL)
}
