package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/auth"
)

// oidcCallback finishes an OpenID Connect sign-in.
func (s *SignIn) oidcCallback(c echo.Context) error {
	if s.OIDC == nil {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	flow := s.cookie(c, "fusebox_oidc")
	s.setCookie(c, "fusebox_oidc", "", 0)
	if e := c.QueryParam("error"); e != "" {
		msg := "The sign-in provider refused: " + e
		if d := c.QueryParam("error_description"); d != "" {
			msg += " (" + d + ")"
		}
		return echo.NewHTTPError(http.StatusUnauthorized, msg)
	}
	p, next, err := s.OIDC.Finish(c.Request().Context(), flow, c.QueryParam("state"), c.QueryParam("code"))
	switch {
	case errors.Is(err, auth.ErrFlow):
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	case err != nil:
		// The cause (a bad client secret, a forged token) goes to the log;
		// the person gets a clear refusal.
		return echo.NewHTTPError(http.StatusUnauthorized, "Sign-in with the provider failed. If it keeps failing, tell your administrator.").SetInternal(fmt.Errorf("web: oidc callback: %w", err))
	}
	return s.signIn(c, p, next)
}
