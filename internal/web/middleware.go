package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/telemetry"
)

// loginBurst is how many sign-in attempts a client may make at once before
// the per-second rate applies.
const loginBurst = 10

func bodyLimit(n int64) string { return strconv.FormatInt(n, 10) + "B" }

// logRequests logs each request once, after it is served. It logs the
// route pattern, never the raw path or query, because links carry tokens.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		// A span per request, continuing the caller's trace when it sends
		// a traceparent; named by route pattern, never by path (tokens).
		req := c.Request()
		ctx := otel.GetTextMapPropagator().Extract(req.Context(), propagation.HeaderCarrier(req.Header))
		ctx, span := telemetry.Tracer().Start(ctx, req.Method, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		c.SetRequest(req.WithContext(ctx))
		err := next(c)
		if err != nil {
			c.Error(err) // renders the error page now, so the status below is final
		}
		res := c.Response()
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := res.Status
		if status >= 500 && errors.Is(req.Context().Err(), context.Canceled) {
			// The client went away before the answer (a function host that
			// restarts mid-report): nothing failed here, and no one reads the
			// 5xx. Logged and counted as nginx's 499, "client closed request".
			status = statusClientClosed
		}
		method := metrics.Method(req.Method)
		span.SetName(method + " " + route)
		span.SetAttributes(attribute.String("http.request.method", method), attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		elapsed := time.Since(start)
		s.Metrics.ObserveHTTP(route, c.Request().Method, status, elapsed)
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		// A refusal is logged at most once a minute per client, route and
		// status, with how many were held back: a flood of forged keys or
		// made-up paths must not flood the log too.
		var held int
		if status >= 400 && status < 500 {
			var ok bool
			if ok, held = s.refusals.allow(c.RealIP() + " " + route + " " + strconv.Itoa(status)); !ok {
				return nil
			}
		}
		attrs := []slog.Attr{
			slog.String("request_id", res.Header().Get(echo.HeaderXRequestID)),
			slog.String("method", method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Int64("bytes", res.Size),
			slog.Duration("duration", elapsed),
			slog.String("remote_ip", c.RealIP()),
		}
		if held > 0 {
			attrs = append(attrs, slog.Int("suppressed", held))
		}
		if cause := logCause(err, status); cause != "" {
			attrs = append(attrs, slog.String("error", cause))
		}
		s.Logger.LogAttrs(c.Request().Context(), level, "http request", attrs...)
		return nil
	}
}

// logCause is what the log says of an error: every server error, and the
// hidden cause of a refusal (such as why a provider rejected a sign-in).
func logCause(err error, status int) string {
	var he *echo.HTTPError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &he) && he.Internal != nil:
		return he.Internal.Error()
	case status >= 500:
		return err.Error()
	}
	return ""
}

// statusClientClosed is what requests whose client left before the answer
// are logged and counted as (nginx's convention; no standard code says it).
const statusClientClosed = 499

// recoverPanics turns a panic into a 500, keeping the stack for the log.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		return next(c)
	}
}

// securityHeaders sets a strict policy: no inline script or style, no
// framing, no referrer leaks of tokenised URLs.
func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		if s.Config.SecureCookies() {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		return next(c)
	}
}

// Context keys.
const (
	keyPrincipal = "fusebox.principal"
	keyCSRF      = "fusebox.csrf"
	keySession   = "fusebox.session" // the session cookie value, when signed in by session
	keyStaleRole = "fusebox.stale"   // a single sign-on session whose role must be read again
)

func (s *Server) cookieName(base string) string {
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
func (s *Server) setCookie(c echo.Context, name, value string, maxAge time.Duration) {
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

func (s *Server) cookie(c echo.Context, name string) string {
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
				case errors.Is(err, auth.ErrNoRole):
					return echo.NewHTTPError(http.StatusForbidden, auth.ErrNoRole.Error())
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
		p, ok := s.Tokens.Principal(strings.TrimSpace(token))
		if !ok {
			return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API token.")
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
			if !p.Role.Allows(role) {
				return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("This needs the %s role; you are signed in as %s.", role, p.Role))
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

func (s *Server) rateLimitError(c echo.Context, _ string, _ error) error {
	return echo.NewHTTPError(http.StatusTooManyRequests, "Too many attempts from your address. Wait a minute and try again.")
}

// detached returns a context for writes that must finish even if the
// browser goes away (an audit entry of a sign-in that happened).
func detached(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(c.Request().Context()), 10*time.Second)
}

// StorageBudget bounds the storage calls of one request, all of them
// together: when storage hangs, a page says so and a report is answered
// 503 within about this, never after the SDK's tries run out.
const StorageBudget = 4 * time.Second

// storageBudget gives each request its StorageBudget (tablestore.WithBudget).
func storageBudget(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(tablestore.WithBudget(r.Context(), time.Now().Add(StorageBudget))))
		return next(c)
	}
}
