package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
)

// A failure report's key is verified before it costs the app it names
// anything: the app's rate budget is spent only by requests whose key
// verified, so a stranger who floods with "fbx_<app>_anything" cannot make
// the real app's reports answer 429. A key not verified lately costs a
// storage read, which unverified keys may make only a few times a second
// per client address.
const (
	// unverifiedRate and unverifiedBurst bound the storage reads keys that
	// did not verify (yet) cost, per client address: a fleet's instances
	// share one key, verified once a minute per Fusebox instance.
	unverifiedRate  = 5
	unverifiedBurst = 20
)

// ingestKey is the key a report presents.
func ingestKey(r *http.Request) string {
	key := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if key == "" {
		key = r.Header.Get("X-Fusebox-Key")
	}
	return key
}

// ctxApp is where ingestGate leaves the verified app's id.
const ctxApp = "fusebox.ingest.app"

// ingestGate verifies a report's key, then spends the app's budget.
func (s *Intake) ingestGate() echo.MiddlewareFunc {
	perApp := newKeyedLimiter(s.Config.IngestRateLimit, int(s.Config.IngestRateLimit*10))
	unverified := newKeyedLimiter(unverifiedRate, unverifiedBurst)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := ingestKey(c.Request())
			appID := auth.AppOfKey(key)
			if !circuit.ValidAppID(appID) { // costs no read and no entry
				s.Metrics.ObserveUnverified("malformed")
				return echo.NewHTTPError(http.StatusUnauthorized, "Send the app's key as Authorization: Bearer fbx_<app>_<secret>.")
			}
			err := s.AppKeys.Verify(c.Request().Context(), appID, key, time.Now(), func() bool { return unverified.allow(c.RealIP()) })
			switch {
			case errors.Is(err, auth.ErrKeyReadsSpent):
				s.Metrics.ObserveUnverified("limited")
				return tooMany(c, "too many reports with keys that do not verify from your address; retry after a second")
			case errors.Is(err, auth.ErrUnknownKey):
				s.Metrics.ObserveUnverified("unknown")
				return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API key.")
			case err != nil:
				return unavailable(err)
			}
			if !perApp.allow(appID) {
				return tooMany(c, "too many failure reports for this app; retry after a second")
			}
			c.Set(ctxApp, appID)
			return next(c)
		}
	}
}
