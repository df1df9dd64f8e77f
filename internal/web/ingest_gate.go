package web

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/storage"
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
	// keyTTL is how long a verified key is believed without a read: a key
	// replaced on another Fusebox instance stops working within it.
	keyTTL = time.Minute
)

// verifiedKeys remembers, per app, the hash of the last key that verified
// and until when. Only verified keys enter it, so it is as large as the
// number of apps that report.
type verifiedKeys struct {
	mu   sync.Mutex
	apps map[string]verifiedKey
}

type verifiedKey struct {
	hash  string
	until time.Time
}

func (v *verifiedKeys) verified(appID, key string, now time.Time) bool {
	v.mu.Lock()
	k, ok := v.apps[appID]
	v.mu.Unlock()
	return ok && now.Before(k.until) && subtle.ConstantTimeCompare([]byte(auth.HashAppKey(key)), []byte(k.hash)) == 1
}

func (v *verifiedKeys) remember(appID, hash string, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.apps == nil {
		v.apps = map[string]verifiedKey{}
	}
	v.apps[appID] = verifiedKey{hash: hash, until: now.Add(keyTTL)}
}

// forget drops an app's key, when it is replaced on this instance.
func (v *verifiedKeys) forget(appID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.apps, appID)
}

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
func (s *Server) ingestGate() echo.MiddlewareFunc {
	perApp := newKeyedLimiter(s.Config.IngestRateLimit, int(s.Config.IngestRateLimit*10))
	unverified := newKeyedLimiter(unverifiedRate, unverifiedBurst)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := ingestKey(c.Request())
			appID := auth.AppOfKey(key)
			if appID == "" {
				s.Metrics.ObserveUnverified("malformed")
				return echo.NewHTTPError(http.StatusUnauthorized, "Send the app's key as Authorization: Bearer fbx_<app>_<secret>.")
			}
			now := time.Now()
			if !s.keys.verified(appID, key, now) {
				if !unverified.allow(c.RealIP()) {
					s.Metrics.ObserveUnverified("limited")
					return tooMany(c, "too many reports with keys not yet verified from your address; retry after a second")
				}
				app, err := s.AppStore.Get(c.Request().Context(), appID)
				switch {
				case errors.Is(err, storage.ErrNoApp), err == nil && !auth.AppKeyMatches(key, app.APIKeyHash):
					s.Metrics.ObserveUnverified("unknown")
					return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API key.")
				case err != nil:
					return unavailable(err)
				}
				s.keys.remember(app.ID, app.APIKeyHash, now)
			}
			if !perApp.allow(appID) {
				return tooMany(c, "too many failure reports for this app; retry after a second")
			}
			c.Set(ctxApp, appID)
			return next(c)
		}
	}
}
