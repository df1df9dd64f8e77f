// Package app wires Fusebox together from a Config: storage, migrations,
// sign-in and the web server. cmd/web calls it; so do the browser tests,
// so they run exactly what ships. New reads as the table of contents; each
// concern is wired in the file named after it.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/buildinfo"
	"log/slog"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"golang.org/x/sync/errgroup"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/loop"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/setaside/watcher"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/telemetry"
	"github.com/fusebox/fusebox/internal/web"
)

// Options are what the caller provides besides configuration.
type Options struct {
	Logger *slog.Logger
	// Clock drives sessions, leases and page times. Default clock.Real.
	Clock clock.Clock
	// OIDCClient talks to the OpenID Connect provider; nil for the default.
	OIDCClient *http.Client
	// Getenv reads the standard OTEL_* variables; default os.Getenv.
	Getenv func(string) string
	// ARMCredential and ARMTransport replace the Azure credential and the
	// HTTP transport of ARM calls (the SDK's fake servers in tests).
	ARMCredential azcore.TokenCredential
	ARMTransport  policy.Transporter
	// HostInsightTTL is how long an app's host snapshot is reused; default 15s.
	HostInsightTTL time.Duration
	// SetAsideEvery is how often apps' poison and parking queues are
	// looked at; default 30s.
	SetAsideEvery time.Duration
	// RetentionEvery is how often waiting events of switched-off Event
	// Hubs triggers are looked at; default a minute.
	RetentionEvery time.Duration
	// DriftEvery is how often each ARM app's functions are compared with
	// its circuits and jobs (zero: every 10 minutes).
	DriftEvery time.Duration
	// ReplayQuiet is how long a partition's checkpoint and ownership must
	// stand still before a replay moves it (replay.Service.Quiet); zero:
	// 30 s.
	ReplayQuiet time.Duration
	// WrapHandler, when set, wraps the web handler: tests check every API
	// answer against docs/openapi.yaml with it.
	WrapHandler func(http.Handler) http.Handler
	// Still serves the pages and the API without Fusebox's own loops:
	// for tests of what a page shows of state they write themselves,
	// which no loop then changes under them.
	Still bool
}

// withDefaults fills what the caller left out.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Logger = slog.New(telemetry.WithTraceIDs(o.Logger.Handler()))
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return o
}

// App is a wired Fusebox instance.
type App struct {
	cfg     *config.Config
	log     *slog.Logger
	clock   clock.Clock
	Store   *storage.Store
	Metrics *metrics.Metrics
	Web     *web.Server
	// Links signs and verifies resume links, for tests that follow a mailed one.
	Links  *alerts.Signer
	Locker *lease.Locker

	breakers breakers
	scanner  *jobs.Scanner
	sender   *alerts.Sender
	watcher  *watcher.Watcher
	sampler  *hostinsight.Sampler
	// retention reminds of waiting events before their hub drops them.
	retention      *alerts.RetentionWatch
	drain          *hostinsight.Drain
	retentionEvery time.Duration
	hubs           *eventhub.Reader
	drift          *fleet.DriftWatch // nil without an Azure identity
	runner         *loop.Runner
	books          atomic.Pointer[lease.Fence] // the books' lease while held here
	// phase shifts this instance's evaluator ticks within the interval, at
	// random: instances that tick at different moments see a table
	// writer's crossing sooner than one would.
	phase         time.Duration
	setAsideEvery time.Duration
	stopLife      context.CancelFunc // ends background send-backs
	stopTracing   func(context.Context) error

	loopsRegistered atomic.Bool
	wrap            func(http.Handler) http.Handler
	still           bool // Options.Still: no loops
}

// New connects to storage, applies migrations (or checks they are applied)
// and builds the web server and the background loops. Every problem is
// reported as a start-up error that says what to fix.
func New(ctx context.Context, cfg *config.Config, o Options) (*App, error) {
	o = o.withDefaults()
	stopTracing, err := telemetry.Setup(ctx, o.Getenv, buildinfo.Get().Version, o.Logger)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	st, err := openStores(ctx, cfg, o, m) // stores.go
	if err != nil {
		return nil, err
	}
	id, err := identities(ctx, cfg, o, st.store) // identity.go
	if err != nil {
		return nil, err
	}
	// Send-backs running in the background end with the instance (Serve).
	life, stopLife := context.WithCancel(context.WithoutCancel(ctx))
	out := reachOut(life, cfg, o, st.store)     // reach.go
	tell, err := tellPeople(cfg, o, st, out, m) // alerting.go
	if err != nil {
		stopLife()
		return nil, err
	}
	b, err := guardCircuits(cfg, o, st, out) // circuits.go
	if err != nil {
		stopLife()
		return nil, err
	}
	b.replay.Counted = m.ObserveReplay
	m.WatchState(stateOf(st.store, b.evaluator), o.Clock.Now)
	if out.drift != nil {
		m.WatchUnguarded(out.drift.Unguarded)
	}
	srv, err := webServer(cfg, o, m, st, id, out, tell, b) // web.go
	if err != nil {
		stopLife()
		return nil, err
	}
	store := st.store
	a := &App{
		cfg: cfg, log: o.Logger, clock: o.Clock, Store: store, Metrics: m, Web: srv, Links: tell.signer, Locker: st.locker,
		breakers: b, sender: tell.sender, hubs: out.hubs, drift: out.drift,
		scanner: jobScanner(o, store, out), // jobs.go
		watcher: &watcher.Watcher{Apps: store.Apps, Circuits: store.Circuits, Kept: store.SetAside, Queues: out.queues,
			Outbox: store.Outbox, Now: o.Clock.Now, Logger: o.Logger},
		sampler:        &hostinsight.Sampler{Apps: store.Apps, Hosts: out.hosts, Samples: store.HostSamples, Now: o.Clock.Now},
		drain:          &hostinsight.Drain{Circuits: storage.Lists{Store: store}, Hosts: out.hosts, Samples: store.HostSamples, Now: o.Clock.Now},
		retention:      &alerts.RetentionWatch{Circuits: withTeamChannels(store, o.Clock.Now), Reader: out.hosts, Outbox: store.Outbox, Clock: o.Clock},
		runner:         &loop.Runner{Clock: o.Clock, Logger: o.Logger, Observer: m},
		phase:          time.Duration(mathrand.Int64N(int64(b.evaluator.Interval()))),
		setAsideEvery:  cmp.Or(o.SetAsideEvery, 30*time.Second),
		retentionEvery: cmp.Or(o.RetentionEvery, time.Minute),
		stopLife:       stopLife, stopTracing: stopTracing, wrap: o.WrapHandler, still: o.Still,
	}
	a.runner.Recorder = loopRecorder{a} // loops.go
	if err := a.ensureLoopJobs(ctx); err != nil {
		// Not migrated yet, most likely; the loops' first passes try again.
		a.log.Info("Fusebox's own loops are not registered as jobs yet", "error", err)
	}
	return a, nil
}

// Serve answers HTTP on l and runs background loops until ctx ends, then
// shuts down gracefully: in-flight requests get the grace period to finish.
func (a *App) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{
		Handler:           a.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		// OTLP/gRPC exporters speak HTTP/2 without TLS (prior knowledge)
		// when TLS ends in front of Fusebox, as App Service's does.
		Protocols: serveProtocols(),
	}
	// Fusebox's own work acts as itself, named; requests carry none of
	// this (the server's connections have their own base context) and
	// are told who asks when they sign in.
	ctx = auth.WithPrincipal(ctx, auth.System)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownGracePeriod)
		defer cancel()
		return hs.Shutdown(shutdownCtx)
	})
	g.Go(func() error {
		<-ctx.Done()
		a.stopLife()
		closing, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		a.hubs.Close(closing)
		return nil
	})
	if a.still {
		return g.Wait()
	}
	g.Go(func() error {
		// Every instance writes what it received itself: no lease.
		a.breakers.arrivals.Run(ctx, 5*time.Second)
		return nil
	})
	g.Go(func() error {
		// Every instance sums up the machine calls it accepted, once a
		// minute: one line per app, not one per export or ping.
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				a.Web.LogIntakeSummary(context.WithoutCancel(ctx))
				return nil
			case <-t.C:
				a.Web.LogIntakeSummary(ctx)
			}
		}
	})
	g.Go(func() error {
		<-ctx.Done()
		if err := a.stopTracing(context.WithoutCancel(ctx)); err != nil {
			a.log.Warn("could not flush traces", "error", err)
		}
		return nil
	})
	g.Go(func() error { return a.Locker.Run(ctx, BooksLease, a.keepBooks) })
	if a.drift != nil {
		// Every instance keeps its own: a page and a scrape read memory.
		g.Go(func() error { a.drift.Run(ctx); return nil })
	}
	for _, l := range a.loops() {
		if l.lease == "" {
			g.Go(func() error { return a.everywhere(ctx, l.Loop) })
			continue
		}
		g.Go(func() error { return a.Locker.Run(ctx, l.lease, a.runner.Work(l.Loop)) })
	}
	return g.Wait()
}

func serveProtocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}

func (a *App) handler() http.Handler {
	if a.wrap != nil {
		return a.wrap(a.Web.Handler())
	}
	return a.Web.Handler()
}

// FlushTelemetry writes what this instance received over OpenTelemetry
// now, instead of at its next flush (every 5 s), for tests and shutdown.
func (a *App) FlushTelemetry(ctx context.Context) error { return a.breakers.arrivals.Flush(ctx) }

// CheckDrift compares every ARM app's functions with its circuits and
// jobs now, as the background check does every DriftEvery.
func (a *App) CheckDrift(ctx context.Context) {
	if a.drift != nil {
		a.drift.Check(ctx)
	}
}
