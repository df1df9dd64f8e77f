package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
)

// logoutSubmit ends the session in storage, so the cookie stops working
// everywhere, not just in this browser.
func (s *SignIn) logoutSubmit(c echo.Context) error {
	if v := s.cookie(c, "fusebox_session"); v != "" {
		if err := s.Sessions.End(c.Request().Context(), v); err != nil {
			return err
		}
	}
	s.setCookie(c, "fusebox_session", "", 0)
	s.setCookie(c, "fusebox_csrf", s.CSRF.NewBrowserID(), 0)
	if p, ok := principal(c); ok {
		ctx, cancel := detached(c)
		defer cancel()
		if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "signed out"}); err != nil {
			return err
		}
	}
	s.setFlash(c, "signed-out")
	return c.Redirect(http.StatusSeeOther, "/login")
}
