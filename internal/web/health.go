package web

import (
	"context"
	"crypto/subtle"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// healthz says the process is alive; it checks nothing else, so a storage
// outage never gets healthy instances restarted.
func (s *OpsPages) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok")
}

// readyz says whether this instance can do its work: storage answers, the
// schema is at the version this build expects, and the breaker is counting
// (some instance's evaluator finished a tick within three intervals). Its
// three storage reads are made at most once a second, whoever asks and
// however often: the answer is shared, on the real clock, so anonymous
// probes cost the store nothing more.
func (s *OpsPages) readyz(c echo.Context) error {
	code, body := s.readiness.answer(func() (int, map[string]string) { return s.ready(context.WithoutCancel(c.Request().Context())) })
	return c.JSON(code, body)
}

func (s *OpsPages) ready(ctx context.Context) (int, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		return http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()}
	}
	st, err := s.Status.Evaluator(ctx)
	if err != nil {
		return http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": "cannot read the evaluator's status"}
	}
	if msg := s.evaluatorStale(st); msg != "" && s.Now().Sub(s.started) > 3*s.Config.EvaluatorInterval {
		return http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": msg}
	}
	return http.StatusOK, map[string]string{"status": "ready"}
}

// readiness keeps the last /readyz answer for a second; callers that come
// while it is being made wait for it rather than make their own.
type readiness struct {
	mu   sync.Mutex
	at   time.Time
	code int
	body map[string]string
}

func (r *readiness) answer(check func() (int, map[string]string)) (int, map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.body == nil || time.Since(r.at) >= time.Second {
		r.code, r.body = check()
		r.at = time.Now()
	}
	return r.code, r.body
}

// metricsHandler serves Prometheus metrics, behind a bearer token when one
// is configured.
func (s *OpsPages) metricsHandler() echo.HandlerFunc {
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
