// Middleware every request runs, people's and machines' alike: its id
// and log line, its storage budget, panics, browser headers.

package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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

	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/telemetry"
)

func bodyLimit(n int64) string { return strconv.FormatInt(n, 10) + "B" }

// logRequests logs each request once, after it is served. It logs the
// route pattern, never the raw path or query, because links carry tokens.
func (s *core) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
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
		switch {
		case status >= 500:
			level = slog.LevelError
		case status < 300 && machineRoute(route):
			// Hosts export and jobs ping many times a second: what they
			// were answered is summed up once a minute per app
			// (intake_summary.go) and counted in
			// fusebox_http_requests_total; only what went wrong is worth
			// a line of its own at info.
			level = slog.LevelDebug
			from, _ := c.Get(ctxApp).(string)
			if from == "" {
				from = machineKind(route)
			}
			s.tally.add(from, elapsed, res.Size)
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

// machineRoute says a route is for machines that call it all the time:
// failure reports, OpenTelemetry exports (HTTP and gRPC), pings and
// Azure Monitor's webhooks.
func machineRoute(route string) bool {
	for _, p := range []string{"/api/v1/failures", "/v1/", OTLPPrefix + "/v1/", "/opentelemetry.proto.", "/ping/", "/hooks/"} {
		if strings.HasPrefix(route, p) {
			return true
		}
	}
	return false
}

// machineKind names the calls of a route that names no app: pings and
// webhooks.
func machineKind(route string) string {
	switch {
	case strings.HasPrefix(route, "/ping/"):
		return "pings"
	case strings.HasPrefix(route, "/hooks/"):
		return "azure-monitor"
	}
	return "unverified"
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
func (s *core) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
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
func (s *core) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
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
	keyOwners    = "fusebox.owners"  // every app's team, read once a request
	keyOwner     = "fusebox.owner"   // the owner of what the route names, looked up once a request
)

// detached returns a context for writes that must finish even if the
// browser goes away (an audit entry of a sign-in that happened).
func detached(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(c.Request().Context()), 10*time.Second)
}

// StorageBudget bounds the storage calls of one request, all of them
// together: when storage hangs, a page says so and a report is answered
// 503 within about this, never after the SDK's tries run out.
const StorageBudget = 4 * time.Second

// storageBudget gives each request its StorageBudget (Base.StorageBudget).
func (s *core) storageBudget(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(s.Base.StorageBudget(r.Context(), time.Now().Add(StorageBudget))))
		return next(c)
	}
}
