package apptest

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/demo"
)

// Seeded starts a whole Fusebox on the fake clock with the demo's data,
// its trigger switch writing the local settings file it returns.
func Seeded(t *testing.T) (*Server, string) {
	t.Helper()
	return seed(t, Start(t, nil))
}

// SeededRealClock is Seeded on the real clock, for journeys that must run
// through real windows.
func SeededRealClock(t *testing.T) (*Server, string) {
	t.Helper()
	return SeededRealClockWith(t, nil)
}

// SeededRealClockWith is SeededRealClock with env set (a mail server's,
// say).
func SeededRealClockWith(t *testing.T, env map[string]string) (*Server, string) {
	t.Helper()
	return seed(t, StartRealClock(t, env))
}

// SeededWithHistory is Seeded with the history `make run` seeds too
// (demo.SeedHistory): the open circuit's failures and flips.
func SeededWithHistory(t *testing.T) (*Server, string) {
	t.Helper()
	srv, settings := Seeded(t)
	if err := demo.SeedHistory(t.Context(), srv.App.Store, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return srv, settings
}

func seed(t *testing.T, srv *Server) (*Server, string) {
	t.Helper()
	settings := t.TempDir() + "/local.settings.json"
	now := time.Now()
	if srv.Clock != nil {
		now = srv.Clock.Now()
	}
	if err := demo.Seed(t.Context(), srv.App.Store, settings, now); err != nil {
		t.Fatal(err)
	}
	return srv, settings
}
