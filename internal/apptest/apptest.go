// Package apptest starts a real Fusebox, wired by internal/app exactly as
// `fusebox serve` wires it, on a loopback port against the test Azurite.
// HTTP and browser tests drive it from outside.
package apptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"golang.org/x/crypto/bcrypt"

	"github.com/fusebox/fusebox/internal/app"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Password is every test user's password.
const Password = "correct horse battery"

// hashedPassword is Password hashed once, at bcrypt's least cost: tests
// sign in hundreds of times, and under the race detector a hash of the
// default cost costs 0.75 s of CPU to check. The path is the same: a
// bcrypt hash carries its own cost (and sets the unknown-name hash's).
var hashedPassword = sync.OnceValues(func() (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
	return string(h), err
})

// User is a FUSEBOX_LOCAL_USERS entry for name with roles (such as
// operator@billing) and Password.
func User(t testing.TB, name, roles string) string {
	t.Helper()
	h, err := hashedPassword()
	if err != nil {
		t.Fatal(err)
	}
	return name + ":" + roles + ":" + h
}

// Server is a running Fusebox.
type Server struct {
	URL    string
	App    *app.App
	Config *config.Config
	Clock  *clock.Fake // nil for StartRealClock
}

// RunFakeClock advances the fake clock a second each half second of real time
// until stop is called. A loop that was mid-pass when the test advanced
// the clock sleeps to the next boundary after it, which a fake clock never
// reaches by itself, though a real one would. Wrap a wait for what a
// loop's next pass does in it, where a few more seconds passing change
// nothing the test asserts.
func (s *Server) RunFakeClock() (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				s.Clock.Advance(time.Second)
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// NextTick advances the clock a second and returns once the evaluator has
// stored a tick that began then or later, so whatever happened before the
// call (a switch call counted, an operator's resume) is in that tick. A
// tick already under way when the clock moved sleeps to the next second
// after it, so the wait runs inside RunFakeClock; it is bounded by 20 s.
func (s *Server) NextTick(t testing.TB) {
	t.Helper()
	s.Clock.Advance(time.Second)
	after := s.Clock.Now()
	stop := s.RunFakeClock()
	defer stop()
	s.TickAfter(t, after)
}

// TickAfter waits, on the real clock (or inside RunFakeClock), until the evaluator has stored a
// tick that began at after or later, so what was stored before after is in
// it. Bounded by 20 s.
func (s *Server) TickAfter(t testing.TB, after time.Time) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		st, err := s.App.Store.Status.Evaluator(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return !st.LastTickAt.Before(after), "no evaluator tick stored since " + after.Format(time.TimeOnly)
	})
}

// WaitCircuit waits, on the real clock, until app's function's circuit is
// what ok says (what, in words), and returns it; bounded by 20 s. A
// circuit that cannot be read fails the test.
func (s *Server) WaitCircuit(t testing.TB, appID, function, what string, ok func(circuit.Circuit) bool) circuit.Circuit {
	t.Helper()
	var c circuit.Circuit
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		var err error
		if c, err = s.App.Store.Circuits.Get(t.Context(), appID, function); err != nil {
			t.Fatal(err)
		}
		return ok(c), fmt.Sprintf("%s/%s is not %s: %s, episode %d, pending %v (%s)", appID, function, what, c.State, c.Episode, c.Pending(), c.Reason)
	})
	return c
}

// Start runs Fusebox until the test ends. env adds or overrides FUSEBOX_*
// variables; by default there are two local users, "olivia" (admin) and
// "victor" (viewer), both with Password. The clock starts at a fixed time.
func Start(t testing.TB, env map[string]string) *Server {
	t.Helper()
	return StartWith(t, env, Options{})
}

// StartStill is Start with none of Fusebox's own loops running: for a
// test of what pages and the API show of state it writes itself, which
// then no loop changes under it (a throttle handed back) between the
// write and the read.
func StartStill(t testing.TB, env map[string]string) *Server {
	t.Helper()
	return StartWith(t, env, Options{Still: true})
}

// StartRealClock is Start on the real clock, for tests that walk a journey
// as a person lives it: nothing jumps past a window.
func StartRealClock(t testing.TB, env map[string]string) *Server {
	t.Helper()
	return StartWith(t, env, Options{RealClock: true})
}

// Options are Start's less common choices.
type Options struct {
	RealClock bool
	// Still starts no loop of Fusebox's own: for tests of what the pages
	// and the API show of state the test writes itself (app.Options.Still).
	Still bool
	// ARMTransport serves ARM calls (an SDK fake server); with it, ARM
	// calls authenticate with a fake credential.
	ARMTransport policy.Transporter
	// HostInsightTTL is how long host snapshots are reused (app.Options).
	HostInsightTTL time.Duration
	// Log, when set, gets every log line at INFO and above (LogLevel and
	// above when set), besides the test log's warnings.
	Log      io.Writer
	LogLevel slog.Level
	// SetAsideEvery is how often set-aside queues are looked at
	// (app.Options).
	SetAsideEvery time.Duration
	// RetentionEvery is how often waiting events' retention is looked at
	// (default a minute).
	RetentionEvery time.Duration
	// ReplayQuiet is how long a checkpoint must stand still before a
	// replay moves it (app.Options; default 30 s).
	ReplayQuiet time.Duration
}

// StartWith is Start with options.
func StartWith(t testing.TB, env map[string]string, o Options) *Server {
	t.Helper()
	watch(t) // its cleanup runs last, so a hung cleanup is caught too
	// The test's temporary directories share one root, removed by the
	// cleanup its first t.TempDir registers. Taken here, before the
	// server's own cleanup, it is removed after the server stops (cleanups
	// run last first), not while a switch still writes a local.settings.json
	// in it (CI saw "TempDir RemoveAll cleanup: directory not empty").
	_ = t.TempDir()
	var clk clock.Clock = clock.Real{}
	fake := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	if !o.RealClock {
		clk = fake
	}
	var cred azcore.TokenCredential
	if o.ARMTransport != nil {
		cred = &azfake.TokenCredential{}
	}
	var transport policy.Transporter
	if o.ARMTransport != nil {
		transport = shielded{o.ARMTransport}
	}
	s := start(t, env, clk, cred, transport, o)
	if !o.RealClock {
		s.Clock = fake
	}
	return s
}

func start(t testing.TB, env map[string]string, clk clock.Clock, armCredential azcore.TokenCredential, armTransport policy.Transporter, o Options) *Server {
	t.Helper()
	hashed, err := hashedPassword()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	_, prefix := testenv.Storage(t) // a fresh prefix whose tables are deleted at the end
	vars := map[string]string{
		"FUSEBOX_ENV":                       "development",
		"FUSEBOX_STORAGE_CONNECTION_STRING": testenv.ConnectionString(t),
		"FUSEBOX_TABLE_PREFIX":              prefix,
		"FUSEBOX_SESSION_KEY":               "test-session-key-0123456789abcdef",
		"FUSEBOX_LOCAL_USERS":               "olivia:admin:" + hashed + ",victor:viewer:" + hashed,
		"FUSEBOX_HTTP_ADDR":                 l.Addr().String(),
		"FUSEBOX_BASE_URL":                  url,
		"FUSEBOX_LOGIN_RATE_LIMIT":          "1000",
		// Longer than net/http's own rule, which closes a connection that
		// sent no request only after 5 to 6 s: a client that dialled one
		// spare (Go's transport under concurrency, Chromium's preconnect)
		// made a 5 s grace run out, and the stop report an error.
		"FUSEBOX_SHUTDOWN_GRACE": "10s",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.Log != nil {
		log = slog.New(slog.NewTextHandler(io.MultiWriter(o.Log, warnings{testWriter{t}}), &slog.HandlerOptions{Level: min(o.LogLevel, slog.LevelInfo)}))
	}
	a, err := app.New(t.Context(), cfg, app.Options{Logger: log, Clock: clk, Getenv: func(k string) string { return vars[k] },
		ARMCredential: armCredential, ARMTransport: armTransport, HostInsightTTL: o.HostInsightTTL, SetAsideEvery: o.SetAsideEvery, RetentionEvery: o.RetentionEvery, ReplayQuiet: o.ReplayQuiet, WrapHandler: newContract(t).wrap, Still: o.Still})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("server stopped with: %v", err)
		}
	})
	return &Server{URL: url, App: a, Config: cfg}
}

// warnings passes on the lines of level WARN and above.
type warnings struct{ w io.Writer }

func (w warnings) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("level=WARN")) || bytes.Contains(p, []byte("level=ERROR")) {
		return w.w.Write(p)
	}
	return len(p), nil
}

// testWriter sends the server's warnings to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// shielded keeps request cancellation away from an SDK fake server: the
// fakes' dispatcher sends on a closed channel, and panics, when a request's
// context ends while its handler runs (as it does when Fusebox stops with
// a call in flight). The caller still gets its context's error at once.
type shielded struct{ next policy.Transporter }

func (s shielded) Do(req *http.Request) (*http.Response, error) {
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := s.next.Do(req.WithContext(context.WithoutCancel(req.Context())))
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}
