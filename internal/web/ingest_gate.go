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
	"github.com/fusebox/fusebox/internal/circuit"
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

// appKeys remembers, per app id a report named, the hash of the app's key
// as storage last had it and until when it is believed; ids storage said
// name no app are kept apart. A key that matches a fresh entry verifies
// without a read, and one that does not is refused without a read unless
// the address it came from may spend one (the key may have been replaced
// on another instance). Entries are kept past their time, so the holder of
// the last known key refreshes it without spending its address's budget.
// Only a storage read that found the app adds to known, so a flood of
// made-up ids fills absent alone and never pushes out a real app's entry,
// fresh or not. Each map holds at most maxLimiterKeys ids.
type appKeys struct {
	mu     sync.Mutex
	known  map[string]appKey
	absent map[string]time.Time // id -> until when "no such app" is believed
}

type appKey struct {
	hash  string // "" for an id that names no app
	until time.Time
}

// get is what is known of appID's key.
func (k *appKeys) get(appID string) (appKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.known[appID]; ok {
		return e, true
	}
	until, ok := k.absent[appID]
	return appKey{until: until}, ok
}

// matches compares a presented key with the known hash in constant time.
func (e appKey) matches(key string) bool {
	return e.hash != "" && subtle.ConstantTimeCompare([]byte(auth.HashAppKey(key)), []byte(e.hash)) == 1
}

// remember keeps what storage said of appID: its key's hash, or "" for no
// such app.
func (k *appKeys) remember(appID, hash string, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.known == nil {
		k.known, k.absent = map[string]appKey{}, map[string]time.Time{}
	}
	until := now.Add(keyTTL)
	if hash == "" {
		delete(k.known, appID)
		if _, ok := k.absent[appID]; ok || makeRoom(k.absent, maxLimiterKeys, now.After) {
			k.absent[appID] = until
		}
		return
	}
	delete(k.absent, appID)
	if _, ok := k.known[appID]; ok || makeRoom(k.known, maxLimiterKeys, func(e appKey) bool { return now.After(e.until) }) {
		k.known[appID] = appKey{hash: hash, until: until}
	}
}

// forget drops an app's key, when it is replaced on this instance.
func (k *appKeys) forget(appID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.known, appID)
	delete(k.absent, appID)
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
			if !circuit.ValidAppID(appID) { // costs no read and no entry
				s.Metrics.ObserveUnverified("malformed")
				return echo.NewHTTPError(http.StatusUnauthorized, "Send the app's key as Authorization: Bearer fbx_<app>_<secret>.")
			}
			now := time.Now()
			known, ok := s.keys.get(appID)
			fresh, match := ok && now.Before(known.until), ok && known.matches(key)
			switch {
			case match && fresh:
				// verified without a read
			case fresh && known.hash == "": // storage said: no such app
				s.Metrics.ObserveUnverified("unknown")
				return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API key.")
			case !match && !unverified.allow(c.RealIP()):
				// Not the key storage had lately, or nothing known: forged,
				// most likely, and each costs a read.
				s.Metrics.ObserveUnverified("limited")
				return tooMany(c, "too many reports with keys that do not verify from your address; retry after a second")
			default:
				// Read: the holder of the last known key refreshes it
				// without spending its address's budget; anyone else spent
				// one of its reads above (the key may have been replaced).
				app, err := s.AppStore.Get(c.Request().Context(), appID)
				switch {
				case errors.Is(err, storage.ErrNoApp):
					s.keys.remember(appID, "", now)
				case err != nil:
					return unavailable(err)
				default:
					s.keys.remember(appID, app.APIKeyHash, now)
				}
				if err != nil || !auth.AppKeyMatches(key, app.APIKeyHash) {
					s.Metrics.ObserveUnverified("unknown")
					return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API key.")
				}
			}
			if !perApp.allow(appID) {
				return tooMany(c, "too many failure reports for this app; retry after a second")
			}
			c.Set(ctxApp, appID)
			return next(c)
		}
	}
}
