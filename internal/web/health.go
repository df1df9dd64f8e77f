package web

import (
	"context"
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// healthz says the process is alive; it checks nothing else, so a storage
// outage never gets healthy instances restarted.
func (s *Server) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok")
}

// readyz says whether this instance can do its work: storage answers, the
// schema is at the version this build expects, and the breaker is counting
// (some instance's evaluator finished a tick within three intervals).
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
	}
	st, err := s.Status.Evaluator(ctx)
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": "cannot read the evaluator's status"})
	}
	if msg := s.evaluatorStale(st); msg != "" && s.Now().Sub(s.started) > 3*s.Config.EvaluatorInterval {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": msg})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// metricsHandler serves Prometheus metrics, behind a bearer token when one
// is configured.
func (s *Server) metricsHandler() echo.HandlerFunc {
	h := echo.WrapHandler(promhttp.HandlerFor(s.Metrics.Registry, promhttp.HandlerOpts{}))
	want := []byte("Bearer " + s.Config.MetricsToken.Reveal())
	return func(c echo.Context) error {
		if s.Config.MetricsToken != "" {
			got := []byte(c.Request().Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="fusebox-metrics"`)
				return echo.NewHTTPError(http.StatusUnauthorized, "This endpoint needs the metrics token.")
			}
		}
		return h(c)
	}
}
