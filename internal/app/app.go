// Package app wires Fusebox together from a Config: storage, migrations,
// sign-in and the web server. cmd/web calls it; so do the browser tests,
// so they run exactly what ships.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/armswitch"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/mailer"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/web"
	"github.com/fusebox/fusebox/migrations"
	"github.com/fusebox/fusebox/static"
)

// Options are what the caller provides besides configuration.
type Options struct {
	Logger *slog.Logger
	// Clock drives sessions, leases and page times. Default clock.Real.
	Clock clock.Clock
	// OIDCClient talks to the OpenID Connect provider; nil for the default.
	OIDCClient *http.Client
}

// App is a wired Fusebox instance.
type App struct {
	cfg     *config.Config
	log     *slog.Logger
	now     func() time.Time
	Store   *storage.Store
	Metrics *metrics.Metrics
	Web     *web.Server
	Locker  *lease.Locker

	clock     clock.Clock
	evaluator *circuit.Evaluator
	scanner   *jobs.Scanner
	sender    *alerts.Sender // nil when mail is off

	loopsRegistered atomic.Bool
}

// OpenStorage connects to Table Storage as configured.
func OpenStorage(cfg *config.Config, m *metrics.Metrics) (*tablestore.Service, error) {
	opts := tablestore.Options{Prefix: cfg.Storage.TablePrefix}
	if m != nil {
		opts.Observe = m.ObserveStorage
	}
	if cfg.Storage.ConnectionString != "" {
		return tablestore.NewFromConnectionString(cfg.Storage.ConnectionString.Reveal(), opts)
	}
	return tablestore.NewWithManagedIdentity(cfg.Storage.AccountURL, opts)
}

// NewLocker prepares the leases table and a Locker for this process.
func NewLocker(ctx context.Context, svc *tablestore.Service, m *metrics.Metrics, clk clock.Clock, log *slog.Logger) (*lease.Locker, error) {
	if err := svc.CreateTable(ctx, storage.TableLeases); err != nil {
		return nil, fmt.Errorf("prepare the leases table: %w", err)
	}
	s := lease.Settings{Logger: log, Clock: clk}
	if m != nil {
		s.Observer = m.Leases()
	}
	return lease.New(storage.New(svc).Leases, s)
}

// Migrator returns the runner for Fusebox's migrations.
func Migrator(svc *tablestore.Service, locker *lease.Locker, log *slog.Logger) (*migrate.Runner, error) {
	return migrate.New(svc, migrations.Steps(), migrate.Settings{Locker: locker, Logger: log})
}

// New connects to storage, applies migrations (or checks they are applied)
// and builds the web server. Every problem is reported as a start-up error
// that says what to fix.
func New(ctx context.Context, cfg *config.Config, o Options) (*App, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	now := o.Clock.Now
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := metrics.New()
	svc, err := OpenStorage(cfg, m)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := svc.Ping(pingCtx); err != nil {
		return nil, fmt.Errorf("cannot reach Table Storage (check FUSEBOX_STORAGE_CONNECTION_STRING or FUSEBOX_STORAGE_ACCOUNT_URL, and that the account is reachable): %w", err)
	}
	locker, err := NewLocker(ctx, svc, m, o.Clock, o.Logger)
	if err != nil {
		return nil, err
	}
	runner, err := Migrator(svc, locker, o.Logger)
	if err != nil {
		return nil, err
	}
	if cfg.MigrateOnStart {
		applied, err := runner.Apply(ctx)
		if err != nil {
			return nil, err
		}
		if len(applied) > 0 {
			o.Logger.Info("migrations applied", "versions", applied)
		}
	}
	store := storage.New(svc)

	key := []byte(cfg.Session.Key.Reveal())
	sessions, err := auth.NewSessions(store.Sessions, key, cfg.Session.TTL, now)
	if err != nil {
		return nil, err
	}
	csrf, err := auth.NewCSRF(key)
	if err != nil {
		return nil, err
	}
	users := make([]auth.LocalUser, 0, len(cfg.LocalUsers))
	for _, u := range cfg.LocalUsers {
		role, err := auth.ParseRole(u.Role)
		if err != nil {
			return nil, err
		}
		users = append(users, auth.LocalUser{Name: u.Name, Role: role, PasswordHash: []byte(u.PasswordHash.Reveal())})
	}
	tokens := make([]auth.APIToken, 0, len(cfg.APITokens))
	for _, t := range cfg.APITokens {
		role, err := auth.ParseRole(t.Role)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, auth.APIToken{Name: t.Name, Role: role, Hash: t.Hash.Reveal()})
	}
	roles := auth.NewRoleMapper(cfg.RoleClaim, cfg.OperatorClaims, cfg.ViewerClaims)
	var oidc *auth.OIDC
	if cfg.OIDC != nil {
		oidc, err = auth.NewOIDC(ctx, auth.OIDCSettings{
			Issuer: cfg.OIDC.Issuer, ClientID: cfg.OIDC.ClientID, ClientSecret: cfg.OIDC.ClientSecret.Reveal(),
			RedirectURL: cfg.BaseURL.JoinPath("/auth/oidc/callback").String(), Scopes: cfg.OIDC.Scopes,
			Roles: roles, HTTPClient: o.OIDCClient, StateKey: key, Now: now,
		})
		if err != nil {
			return nil, err
		}
	}
	var easy *auth.EasyAuth
	if cfg.EasyAuth {
		easy = auth.NewEasyAuth(roles)
	}
	assets, err := static.Load()
	if err != nil {
		return nil, err
	}
	router := switches.Router{Local: switches.Local{}}
	if cred, err := azidentity.NewDefaultAzureCredential(nil); err == nil {
		router.ARM = armswitch.New(cred, armswitch.Settings{})
	} else {
		o.Logger.Warn("no Azure credential: apps registered with the ARM switch cannot be switched", "error", err)
	}
	linkKeys := map[string][]byte{}
	for _, k := range cfg.Mail.LinkKeys {
		linkKeys[k.ID] = []byte(k.Key.Reveal())
	}
	signer, err := alerts.NewSigner(cfg.Mail.LinkKeys[0].ID, linkKeys)
	if err != nil {
		return nil, err
	}
	srv, err := web.New(web.Deps{
		Config: cfg, Logger: o.Logger, Metrics: m, Assets: assets,
		Sessions: sessions, CSRF: csrf, Local: auth.NewLocalUsers(users), OIDC: oidc, EasyAuth: easy,
		Apps: store.Apps, Circuits: store.Circuits, Jobs: store.Jobs, Audit: store.Audit, Leases: locker,
		AppStore: store.Apps, Failures: store.Failures, Status: store.Status, Rates: store.Rates, Window: store.Failures,
		Actions: circuit.NewService(storage.EvaluatorStore{Store: store}, store.Audit, now),
		Tokens:  auth.NewAPITokens(tokens), FunctionLister: router, FunctionRunner: router, Links: signer, Outbox: store.Outbox,
		JobStore: store.Jobs, Runs: store.Runs, RunReader: store.Runs,
		Ready: func(ctx context.Context) error { return ready(ctx, svc, runner) },
		Now:   now,
	})
	if err != nil {
		return nil, err
	}
	evaluator := circuit.NewEvaluator(storage.EvaluatorStore{Store: store}, router, circuit.EvaluatorSettings{
		Interval: cfg.EvaluatorInterval, DriftEvery: cfg.DriftCheckInterval, Clock: o.Clock, Logger: o.Logger, Identity: locker.Identity(),
	})
	a := &App{cfg: cfg, log: o.Logger, clock: o.Clock, now: now, Store: store, Metrics: m, Web: srv, Locker: locker, evaluator: evaluator,
		scanner: jobs.NewScanner(storage.ScannerStore{Store: store}, o.Clock, o.Logger)}
	a.scanner.Notify = alerts.JobNotifier(store.Outbox, storage.EvaluatorStore{Store: store})
	if err := a.ensureLoopJobs(ctx); err != nil {
		// Not migrated yet, most likely; the loops' first passes try again.
		a.log.Info("Fusebox's own loops are not registered as jobs yet", "error", err)
	}
	if cfg.Mail.Host != "" {
		reminders := cfg.Mail.MaxReminders
		if reminders == 0 {
			reminders = -1 // the sender reads 0 as "the default"
		}
		a.sender = alerts.NewSender(store.Outbox, storage.EvaluatorStore{Store: store},
			mailer.SMTP{Host: cfg.Mail.Host, Port: cfg.Mail.Port, Username: cfg.Mail.Username, Password: cfg.Mail.Password.Reveal(), TLS: cfg.Mail.TLS, From: cfg.Mail.From},
			mailer.Composer{Signer: signer, BaseURL: cfg.BaseURL, LinkTTL: cfg.Mail.LinkTTL, Now: now},
			alerts.SenderSettings{RemindEvery: cfg.Mail.RemindEvery, MaxReminders: reminders, Clock: o.Clock, Logger: o.Logger,
				Jobs: mailer.JobComposer{Jobs: store.Jobs, BaseURL: cfg.BaseURL}})
	} else {
		o.Logger.Warn("mail is off: set FUSEBOX_SMTP_HOST to mail recipients when circuits open")
	}
	return a, nil
}

func ready(ctx context.Context, svc *tablestore.Service, runner *migrate.Runner) error {
	if err := svc.Ping(ctx); err != nil {
		return errors.New("table storage is unreachable")
	}
	v, err := runner.Current(ctx)
	if err != nil {
		return errors.New("cannot read the schema version")
	}
	if v != runner.Latest() {
		return fmt.Errorf("schema is at version %d, this build needs %d: run fusebox migrate", v, runner.Latest())
	}
	return nil
}

// Serve answers HTTP on l and runs background loops until ctx ends, then
// shuts down gracefully: in-flight requests get the grace period to finish.
func (a *App) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{
		Handler:           a.Web.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
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
		return a.Locker.Run(ctx, "sessions/sweeper", func(ctx context.Context, _ lease.Fence) error { return a.sweepSessions(ctx) })
	})
	g.Go(func() error { return a.Locker.Run(ctx, "evaluator", a.evaluator.Run) })
	g.Go(func() error { return a.Locker.Run(ctx, "jobs/scanner", a.scanner.Run) })
	g.Go(func() error {
		return a.Locker.Run(ctx, "failures/pruner", func(ctx context.Context, _ lease.Fence) error { return a.pruneFailures(ctx) })
	})
	if a.sender != nil {
		g.Go(func() error { return a.Locker.Run(ctx, "mail/sender", a.sender.Run) })
	}
	g.Go(func() error {
		return a.Locker.Run(ctx, "failures/rollup", func(ctx context.Context, _ lease.Fence) error { return a.rollUp(ctx) })
	})
	return g.Wait()
}

// Fusebox's own background loops are jobs too, so a loop that stops is a
// gap on the Jobs page like any other. Their ids are fixed.
var (
	loopPruner  = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000001", Name: "Fusebox: failure pruner", Schedule: "0 */10 * * * *", Grace: 10 * time.Minute}
	loopRollup  = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000002", Name: "Fusebox: failure roll-up", Schedule: "*/30 * * * * *", Grace: time.Minute}
	loopSweeper = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000003", Name: "Fusebox: session sweeper", Schedule: "0 */10 * * * *", Grace: 10 * time.Minute}
)

// ensureLoopJobs registers the loops as jobs, keeping any settings an
// operator changed since. It runs at start and again on each loop pass
// until it succeeds, so an instance started before migrations still
// registers them.
func (a *App) ensureLoopJobs(ctx context.Context) error {
	if a.loopsRegistered.Load() {
		return nil
	}
	for _, j := range []jobs.Job{loopPruner, loopRollup, loopSweeper} {
		if _, err := a.Store.Jobs.Get(ctx, j.ID); err == nil {
			continue
		} else if !errors.Is(err, storage.ErrNoJob) {
			return err
		}
		j.TimeZone, j.CreatedAt, j.Status = "UTC", a.now(), jobs.New
		if err := a.Store.Jobs.Put(ctx, j); err != nil {
			return err
		}
	}
	a.loopsRegistered.Store(true)
	return nil
}

// sleepToNext sleeps until the next multiple of every on the UTC clock,
// the loops' schedules, so passes do not drift off their slots by the
// time each pass takes.
func (a *App) sleepToNext(ctx context.Context, every time.Duration) error {
	now := a.now()
	return a.clock.Sleep(ctx, now.Truncate(every).Add(every).Sub(now))
}

// recordLoop reports one pass of a loop as a run of its job.
func (a *App) recordLoop(ctx context.Context, j jobs.Job, passErr error) {
	if err := a.ensureLoopJobs(ctx); err != nil {
		if ctx.Err() == nil {
			a.log.Warn("could not register Fusebox's own loops as jobs", "error", err)
		}
		return
	}
	ev := jobs.EventSuccess
	var log []byte
	if passErr != nil {
		ev, log = jobs.EventFailure, []byte(passErr.Error())
	}
	err := a.Store.Runs.Record(ctx, j.ID, "", ev, -1, a.now(), log)
	if err == nil {
		err = a.Store.Jobs.Touch(ctx, j.ID, a.now())
	}
	if err != nil && ctx.Err() == nil {
		a.log.Warn("could not record a loop's run", "loop", j.Name, "error", err)
	}
}

// rollUp stores per-minute failure counts for charts every 30 seconds,
// redoing the last two whole minutes so late rows are counted.
func (a *App) rollUp(ctx context.Context) error {
	for {
		now := a.now()
		var err error
		for _, back := range []time.Duration{2 * time.Minute, time.Minute} {
			if _, e := a.Store.Rates.Rollup(ctx, a.Store.Failures, now.Add(-back)); e != nil {
				err = e
			}
		}
		a.Metrics.ObserveLoop("failures_rollup", a.now(), err)
		a.recordLoop(ctx, loopRollup, err)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("failure roll-up failed", "error", err)
		}
		if err := a.sleepToNext(ctx, 30*time.Second); err != nil {
			return nil
		}
	}
}

// pruneFailures deletes failure rows older than the longest window allows
// (24 h) plus an hour, every ten minutes.
func (a *App) pruneFailures(ctx context.Context) error {
	for {
		n, err := a.Store.Failures.DeleteBefore(ctx, a.now().Add(-circuit.MaxWindow-time.Hour))
		if _, e := a.Store.Rates.DeleteBefore(ctx, a.now().Add(-8*24*time.Hour)); e != nil && err == nil {
			err = e
		}
		if _, e := a.Store.Runs.DeleteBefore(ctx, a.now().Add(-35*24*time.Hour)); e != nil && err == nil {
			err = e
		}
		a.recordLoop(ctx, loopPruner, err)
		a.Metrics.ObserveLoop("failures_pruner", a.now(), err)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("failure pruning failed", "error", err)
		} else if n > 0 {
			a.log.Info("old failure rows removed", "count", n)
		}
		if err := a.sleepToNext(ctx, 10*time.Minute); err != nil {
			return nil
		}
	}
}

// sweepSessions deletes expired sessions every ten minutes, on the one
// instance that holds the sweeper's lease, until ctx ends.
func (a *App) sweepSessions(ctx context.Context) error {
	for {
		n, err := a.Store.Sessions.DeleteExpired(ctx, a.now())
		a.Metrics.ObserveLoop("session_sweeper", a.now(), err)
		a.recordLoop(ctx, loopSweeper, err)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("session sweep failed", "error", err)
		} else if n > 0 {
			a.log.Info("expired sessions removed", "count", n)
		}
		if err := a.sleepToNext(ctx, 10*time.Minute); err != nil {
			return nil
		}
	}
}
