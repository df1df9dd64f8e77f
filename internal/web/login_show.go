package web

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// loginShow offers the sign-in methods that are configured. Someone already
// signed in goes straight on.
func (s *SignIn) loginShow(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if _, ok := principal(c); ok {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return render(c, http.StatusOK, views.LoginPage(s.loginModel(c, next, "", "")))
}

func (s *SignIn) loginModel(c echo.Context, next, userName, problem string) views.Login {
	m := views.Login{
		Page:         s.page(c, "Sign in", ""),
		LocalEnabled: s.Local.Enabled(),
		OIDCEnabled:  s.OIDC != nil,
		Next:         next,
		UserName:     userName,
		Error:        problem,
	}
	if s.OIDC != nil {
		m.OIDCName = s.Config.OIDC.DisplayName
		m.OIDCHref = "/auth/oidc/login?next=" + url.QueryEscape(next)
	}
	return m
}
