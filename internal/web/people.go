// The people's room: cookies, CSRF, sessions, API tokens and roles. The
// machine intake (failure reports, OTLP, pings) runs none of it: its
// chains are in routes.go, its key gate in ingest_gate.go.

package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/auth"
)

// loginBurst is how many sign-in attempts a client may make at once before
// the per-second rate applies.
const loginBurst = 10

func (s *core) cookieName(base string) string {
	// __Host- cookies are pinned to this host and path /, and must be Secure.
	if s.Config.SecureCookies() {
		return "__Host-" + base
	}
	return base
}

// setCookie sets an HttpOnly, SameSite=Lax cookie (Secure under TLS). A
// positive maxAge bounds its life; it is relative, so it holds whatever the
// server's and the browser's clocks say. Zero makes a browser-session
// cookie; an empty value deletes the cookie.
func (s *core) setCookie(c echo.Context, name, value string, maxAge time.Duration) {
	ck := &http.Cookie{
		Name: s.cookieName(name), Value: value, Path: "/", HttpOnly: true,
		Secure: s.Config.SecureCookies(), SameSite: http.SameSiteLaxMode,
	}
	if value == "" {
		ck.MaxAge = -1
	} else if maxAge > 0 {
		ck.MaxAge = int(maxAge / time.Second)
	}
	c.SetCookie(ck)
}

func (s *core) cookie(c echo.Context, name string) string {
	ck, err := c.Cookie(s.cookieName(name))
	if err != nil {
		return ""
	}
	return ck.Value
}

// csrf gives each browser an id cookie and checks that every unsafe request
// carries the matching token, from the form field _csrf or the
// X-CSRF-Token header. Requests the browser marks as cross-site are refused
// outright.
func (s *Server) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := s.cookie(c, "fusebox_csrf")
		if id == "" {
			id = s.CSRF.NewBrowserID()
			s.setCookie(c, "fusebox_csrf", id, 0)
		}
		c.Set(keyCSRF, s.CSRF.Token(id))
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if c.Request().Header.Get("Sec-Fetch-Site") == "cross-site" {
			return echo.NewHTTPError(http.StatusForbidden, "This request came from another site and was refused.")
		}
		token := c.Request().Header.Get("X-CSRF-Token")
		if token == "" {
			token = c.FormValue("_csrf")
		}
		if !s.CSRF.Valid(id, token) {
			return echo.NewHTTPError(http.StatusForbidden, "This form has expired or did not come from Fusebox. Reload the page and try again.")
		}
		return next(c)
	}
}

// loadPrincipal finds who is asking: Easy Auth's header when enabled,
// otherwise the session cookie. Nobody signed in is not an error here;
// require decides what needs a principal.
func (s *Server) loadPrincipal(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.EasyAuth != nil {
			if h := c.Request().Header.Get("X-MS-CLIENT-PRINCIPAL"); h != "" {
				p, err := s.EasyAuth.Principal(h)
				switch {
				case err != nil:
					return echo.NewHTTPError(http.StatusUnauthorized, "The sign-in information from App Service could not be read.")
				}
				c.Set(keyPrincipal, p)
				return next(c)
			}
		}
		if v := s.cookie(c, "fusebox_session"); v != "" {
			sess, err := s.Sessions.Lookup(c.Request().Context(), v)
			switch {
			case errors.Is(err, auth.ErrNoSession):
				s.setCookie(c, "fusebox_session", "", 0)
			case err != nil:
				return fmt.Errorf("web: %w", err)
			case sess.Provider == "local":
				// A local user's role is configuration's, read at each
				// request: a role taken away applies at once.
				p, ok := s.Local.Current(sess.Principal)
				if !ok {
					s.setCookie(c, "fusebox_session", "", 0)
					break
				}
				c.Set(keyPrincipal, p)
				c.Set(keySession, v)
			case sess.Provider == "oidc" && s.Config.OIDC != nil && s.Now().Sub(sess.CreatedAt) > s.Config.OIDC.RoleMaxAge:
				// The provider's role claims are read again: require sends
				// the browser through the provider, which signs a user who is
				// still signed in there back in at once.
				c.Set(keyStaleRole, true)
			default:
				c.Set(keyPrincipal, sess.Principal)
				c.Set(keySession, v)
			}
		}
		return next(c)
	}
}

// apiAuth accepts an API token (Authorization: Bearer fbt_...) or, failing
// that, the browser session with CSRF protection on changes.
func (s *Server) apiAuth(next echo.HandlerFunc) echo.HandlerFunc {
	session := s.csrf(s.loadPrincipal(next))
	return func(c echo.Context) error {
		h := c.Request().Header.Get("Authorization")
		token, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return session(c)
		}
		token = strings.TrimSpace(token)
		p, ok := s.Tokens.Principal(token)
		if _, issued := auth.IssuedID(token); issued {
			var err error
			if p, ok, err = s.Issued.Principal(c.Request().Context(), token); err != nil {
				return err // storage: answered as its failures are
			}
		}
		if !ok {
			return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API token, or one that was revoked or has ended.")
		}
		c.Set(keyPrincipal, p)
		return next(c)
	}
}

// require lets the request through only for a principal holding role.
// Browsers without one are sent to sign in; API clients get a 401.
func (s *Server) require(role auth.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := principal(c)
			if !ok && c.Get(keyStaleRole) == true && s.OIDC != nil {
				if isAPI(c) || c.Request().Method != http.MethodGet {
					return echo.NewHTTPError(http.StatusUnauthorized, "Your role is read again from your identity provider every "+everyText(s.Config.OIDC.RoleMaxAge)+": reload the page, then send again.")
				}
				return c.Redirect(http.StatusSeeOther, "/auth/oidc/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			if !ok {
				if isAPI(c) || c.Request().Method != http.MethodGet {
					return echo.NewHTTPError(http.StatusUnauthorized, "Sign in first.")
				}
				return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			p, err := s.withTeams(c, p)
			if err != nil {
				return err
			}
			c.Set(keyPrincipal, p)
			c.SetRequest(c.Request().WithContext(auth.WithPrincipal(c.Request().Context(), p)))
			// What the route names is checked against the role held on it,
			// found or not; what names nothing, against the highest held.
			o, err := s.ownerOnce(c)
			if err != nil {
				return err
			}
			if err := access.Decide(p, o, role); err != nil {
				return refused(err)
			}
			return next(c)
		}
	}
}

// everyText says a period as people do: "5 minutes", "30s".
func everyText(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		if d == time.Minute {
			return "minute"
		}
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	}
	return d.String()
}

func principal(c echo.Context) (auth.Principal, bool) {
	p, ok := c.Get(keyPrincipal).(auth.Principal)
	return p, ok
}

func csrfToken(c echo.Context) string {
	t, _ := c.Get(keyCSRF).(string)
	return t
}

func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") }

// safeNext keeps post-sign-in redirects on this site: a path, not "//host"
// or "/\host", which browsers treat as another origin.
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

func (s *core) rateLimitError(c echo.Context, _ string, _ error) error {
	return echo.NewHTTPError(http.StatusTooManyRequests, "Too many attempts from your address. Wait a minute and try again.")
}
