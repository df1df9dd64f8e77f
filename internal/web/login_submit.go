package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/views"
)

// loginSubmit checks a local user's password and starts a session.
func (s *SignIn) loginSubmit(c echo.Context) error {
	if !s.Local.Enabled() {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	name, password := c.FormValue("username"), c.FormValue("password")
	next := safeNext(c.FormValue("next"))
	p, err := s.Local.Authenticate(name, password)
	if errors.Is(err, auth.ErrBadCredentials) {
		return render(c, http.StatusUnauthorized, views.LoginPage(s.loginModel(c, next, name, err.Error())))
	}
	if err != nil {
		return err
	}
	return s.signIn(c, p, next)
}

// signIn starts a session for p, records it and sends the browser on.
func (s *SignIn) signIn(c echo.Context, p auth.Principal, next string) error {
	// End any earlier session of this browser, so a session id fixed
	// before sign-in never carries over.
	if old := s.cookie(c, "fusebox_session"); old != "" {
		if err := s.Sessions.End(c.Request().Context(), old); err != nil {
			return err
		}
	}
	value, expires, err := s.Sessions.Start(c.Request().Context(), p)
	if err != nil {
		return err
	}
	s.setCookie(c, "fusebox_session", value, expires.Sub(s.Now()))
	// A new CSRF id too: a token taken before sign-in (or a cookie
	// planted then) does not work for the session.
	s.setCookie(c, "fusebox_csrf", s.CSRF.NewBrowserID(), 0)
	ctx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "signed in", Detail: "via " + p.Provider + " as " + p.Role.String()}); err != nil {
		return err
	}
	s.setFlash(c, "signed-in")
	return c.Redirect(http.StatusSeeOther, next)
}
