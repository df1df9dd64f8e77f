package apptest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Health serves a dependency's health endpoint until the test ends: 503
// (with a body no page may show) until healthy is set, then 200. url is
// the endpoint's.
func Health(t testing.TB) (url string, healthy *atomic.Bool) {
	t.Helper()
	healthy = &atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "the inventory database is down: secret-looking detail", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/health", healthy
}
