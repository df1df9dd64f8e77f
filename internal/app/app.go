// Package app wires Fusebox together from a Config: storage, migrations,
// sign-in and the web server. cmd/web calls it; so do the browser tests,
// so they run exactly what ships.
package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"log/slog"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/loop"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/queues"
	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/sendback"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/containerapps"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/telemetry"
	"github.com/fusebox/fusebox/internal/web"
	"github.com/fusebox/fusebox/internal/wording"
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
	// WrapHandler, when set, wraps the web handler: tests check every API
	// answer against docs/openapi.yaml with it.
	WrapHandler func(http.Handler) http.Handler
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

	clock       clock.Clock
	stopTracing func(context.Context) error
	runner      *loop.Runner
	books       atomic.Pointer[lease.Fence] // the books' lease while held here
	// phase shifts this instance's evaluator ticks within the interval, at
	// random: instances that tick at different moments see a table
	// writer's crossing sooner than one would.
	phase     time.Duration
	evaluator *circuit.Evaluator
	scanner   *jobs.Scanner
	sender    *alerts.Sender
	verifier  *circuit.Verifier
	hosts     *hostinsight.Source
	queues    *queues.Source
	// setAsideEvery is how often the set-aside queues are looked at.
	setAsideEvery time.Duration
	stopLife      context.CancelFunc // ends background send-backs
	watching      watching           // apps whose set-aside queues are being read
	hubs          *eventhub.Reader
	arrivals      *otlp.Arrivals

	loopsRegistered atomic.Bool
	wrap            func(http.Handler) http.Handler
}

// OpenStorage connects to Table Storage as configured.
func OpenStorage(cfg *config.Config, m *metrics.Metrics) (*tablestore.Service, error) {
	opts := tablestore.Options{Prefix: cfg.Storage.TablePrefix, Tracing: telemetry.AzureProvider()}
	if m != nil {
		opts.Observe = m.ObserveStorage
	}
	if cfg.Storage.ConnectionString != "" {
		return tablestore.NewFromConnectionString(cfg.Storage.ConnectionString.Reveal(), opts)
	}
	return tablestore.NewWithManagedIdentity(cfg.Storage.AccountURL, opts)
}

// NewLocker prepares the leases table and a Locker for this process.
func NewLocker(ctx context.Context, svc *tablestore.Service, timing config.LeaseTiming, m *metrics.Metrics, clk clock.Clock, log *slog.Logger) (*lease.Locker, error) {
	if err := svc.CreateTable(ctx, storage.TableLeases); err != nil {
		return nil, fmt.Errorf("prepare the leases table: %w", err)
	}
	s := lease.Settings{Logger: log, Clock: clk, Duration: timing.Duration, RenewDeadline: timing.RenewDeadline, RetryPeriod: timing.RetryPeriod}
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
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	stopTracing, err := telemetry.Setup(ctx, o.Getenv, "dev", o.Logger)
	if err != nil {
		return nil, err
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
	locker, err := NewLocker(ctx, svc, cfg.Leases, m, o.Clock, o.Logger)
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
	if err := useSecrets(ctx, cfg, store, o.Logger); err != nil {
		return nil, err
	}
	m.WatchUnreadableRows(store.Faults.Counts)
	var built atomic.Pointer[App]
	m.WatchState(func(ctx context.Context) (metrics.State, error) {
		ev, err := store.Status.Evaluator(ctx)
		if err != nil {
			return metrics.State{}, err
		}
		if a := built.Load(); a != nil {
			// Switch calls are counted by the instance that made them.
			ev.Tally.Applies, ev.Tally.ApplyLatency = a.evaluator.Applies()
		}
		js, err := store.Status.Scanner(ctx)
		return metrics.State{Evaluator: ev, Jobs: js}, err
	}, now)

	key := []byte(cfg.Session.Key.Reveal())
	sessions, err := auth.NewSessions(store.Sessions, auth.DeriveKey(key, auth.PurposeSessions), cfg.Session.TTL, now)
	if err != nil {
		return nil, err
	}
	csrf, err := auth.NewCSRF(auth.DeriveKey(key, auth.PurposeCSRF))
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
			Roles: roles, HTTPClient: o.OIDCClient, StateKey: auth.DeriveKey(key, auth.PurposeOIDCState), Now: now,
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
	router := switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: cfg.Env == config.Development, Root: cfg.LocalSwitchRoot}, Delay: cfg.LocalSwitchDelay}}
	armSettings := appservice.Settings{Transport: o.ARMTransport, Tracing: telemetry.AzureProvider()}
	acaSettings := containerapps.Settings{Transport: o.ARMTransport}
	azureCred, insightCred := azureCredentials(cfg, o)
	if azureCred != nil {
		router.ARM = appservice.New(azureCred, armSettings)
		router.ContainerApp = containerapps.New(azureCred, acaSettings)
	}
	linkKeys := map[string][]byte{}
	for _, k := range cfg.Mail.LinkKeys {
		linkKeys[k.ID] = []byte(k.Key.Reveal())
	}
	signer, err := alerts.NewSigner(cfg.Mail.LinkKeys[0].ID, linkKeys)
	if err != nil {
		return nil, err
	}
	// Host insight and chat channels reach endpoints an operator typed:
	// only through the guarded dialer, and host insight only with a
	// credential that cannot be asked for anything but Storage and Event
	// Hubs tokens, whatever a server's challenge says.
	outbound := egress.Policy{AllowLoopback: cfg.Env == config.Development, AllowPrefixes: cfg.EgressAllow}
	endpoints := egress.Endpoints{Cloud: egress.Clouds[cfg.AzureCloud], Development: cfg.Env == config.Development}
	hubs := &eventhub.Reader{Credential: insightCred, Endpoints: endpoints, Policy: outbound}
	hostSource := &hostinsight.Source{Credential: insightCred, Endpoints: endpoints, Transport: outbound.Transporter(), TTL: o.HostInsightTTL, Hubs: hubs}
	queueSource := &queues.Source{Credential: insightCred, Transport: outbound.Transporter(), Endpoints: endpoints}
	sendBack := &sendback.Runner{Queues: queueSource, Runs: store.SetAside, Audit: store.Audit, Now: now, Logger: o.Logger}
	composer := wording.Composer{Signer: signer, BaseURL: cfg.BaseURL, LinkTTL: cfg.Mail.LinkTTL, Now: now}
	smtp := notify.SMTP{Host: cfg.Mail.Host, Port: cfg.Mail.Port, Username: cfg.Mail.Username, Password: cfg.Mail.Password.Reveal(), TLS: cfg.Mail.TLS, From: cfg.Mail.From}
	poster := notify.Poster{Now: now, Client: outbound.Client(5 * time.Second)}
	reports := reportService(store, now, cfg.IngestRowLimit)
	arrivals := &otlp.Arrivals{Store: store.Arrivals, Instance: locker.Identity(), Logger: o.Logger}
	telemetryIn := &ingest.Telemetry{Reports: reports, Seen: &otlp.Seen{}, Arrivals: arrivals, Now: now}
	actions := circuit.NewService(storage.EvaluatorStore{Store: store}, store.Audit, now)
	actions.TraceOf = telemetry.TraceParent
	actions.Functions = router
	srv, err := web.New(web.Deps{
		Base: web.Base{Config: cfg, Logger: o.Logger, Metrics: m, Assets: assets, Now: now, Endpoints: endpoints},
		Identity: web.Identity{Sessions: sessions, CSRF: csrf, Local: auth.NewLocalUsers(users), OIDC: oidc, EasyAuth: easy,
			Tokens: auth.NewAPITokens(tokens)},
		CircuitDeps: web.CircuitDeps{Apps: store.Apps, AppStore: store.Apps, Circuits: store.Circuits,
			Actions: actions,
			Reports: reports, OTLP: telemetryIn, Arrivals: store.Arrivals, Window: store.Failures.Reader(), Rates: store.Rates, Status: store.Status,
			Links: signer, Outbox: store.Outbox, FunctionLister: router, Hosting: router, HostInsight: hostSource, HostSamples: store.HostSamples,
			Queues: queueSource, Kept: store.SetAside, SendBack: sendBack},
		JobDeps: web.JobDeps{Jobs: store.Jobs, JobStore: store.Jobs, Pings: pings(store), Catalog: jobs.Catalog{Store: store.Jobs}, RunReader: store.Runs, FunctionRunner: router},
		NotifyDeps: web.NotifyDeps{Channels: store.Channels, Delivery: store.Status,
			TestChannel: channelTester(cfg, smtp, poster, now)},
		Ops: web.Ops{Audit: store.Audit, Leases: locker, Faults: store.Faults,
			Ready: func(ctx context.Context) error { return ready(ctx, svc, runner) }},
	})
	if err != nil {
		return nil, err
	}
	claims, err := lease.NewClaims(store.Leases, locker.Identity(), nil, o.Logger)
	if err != nil {
		return nil, err
	}
	evaluator := circuit.NewEvaluator(storage.EvaluatorStore{Store: store}, router, circuit.EvaluatorSettings{
		Claims: claims, Interval: cfg.EvaluatorInterval, DriftEvery: cfg.DriftCheckInterval, Clock: o.Clock, Logger: o.Logger, Identity: locker.Identity(),
		OnTransition: traceTransition,
	})
	verifier := circuit.NewVerifier(storage.EvaluatorStore{Store: store}, router, circuit.VerifierSettings{Clock: o.Clock, Logger: o.Logger})
	// Send-backs running in the background end with the instance (Serve).
	life, stopLife := context.WithCancel(context.WithoutCancel(ctx))
	sendBack.Life = life
	a := &App{stopLife: stopLife, queues: queueSource, setAsideEvery: cmp.Or(o.SetAsideEvery, 30*time.Second), verifier: verifier, hosts: hostSource, hubs: hubs, arrivals: arrivals, stopTracing: stopTracing, cfg: cfg, log: o.Logger, clock: o.Clock, now: now, Store: store, Metrics: m, Web: srv, Locker: locker, evaluator: evaluator,
		scanner: jobs.NewScanner(storage.ScannerStore{Store: store}, o.Clock, o.Logger)}
	a.wrap = o.WrapHandler
	a.phase = time.Duration(mathrand.Int64N(int64(evaluator.Interval())))
	reports.Stored = func(counted []storage.Report) {
		told := make([]circuit.Reported, len(counted))
		for i, r := range counted {
			told[i] = circuit.Reported{AppID: r.App, Function: r.Function, Failures: r.Count, Successes: r.Successes}
		}
		evaluator.Nudge(told)
	}
	a.runner = &loop.Runner{Clock: o.Clock, Logger: o.Logger, Observer: m}
	a.runner.Recorder = loopRecorder{a}
	a.scanner.TimerLast = func(ctx context.Context, j jobs.Job, now time.Time) time.Time {
		if j.AppID == "" || j.Function == "" {
			return time.Time{}
		}
		app, err := store.Apps.Get(ctx, j.AppID)
		if err != nil {
			return time.Time{}
		}
		return hostSource.LastFired(ctx, app, j.Function, now)
	}
	a.scanner.CatchUp = jobs.CatchUps{
		TriggerHeld: func(ctx context.Context, appID, function string) (bool, error) {
			c, err := store.Circuits.Get(ctx, appID, function)
			if errors.Is(err, circuit.ErrNotFound) {
				return false, nil
			}
			return err == nil && c.State.TriggerOff(), err
		},
		Claim: store.Jobs.ClaimCatchUp,
		Run: func(ctx context.Context, appID, function string) error {
			app, err := store.Apps.Get(ctx, appID)
			if err != nil {
				return err
			}
			return router.Run(ctx, app, function)
		},
		Pings: pings(store),
		Audit: store.Audit.Append,
		Warn:  o.Logger.Warn,
	}.Do
	a.scanner.Notify = alerts.JobNotifier(store.Outbox, storage.EvaluatorStore{Store: store})
	reminders := cfg.Mail.MaxReminders
	if reminders == 0 {
		reminders = -1 // the sender reads 0 as "the default"
	}
	var mail alerts.Mailer
	if cfg.Mail.Host != "" {
		mail = smtp
	} else {
		o.Logger.Warn("mail is off: set FUSEBOX_SMTP_HOST to mail recipients when circuits open; channels still get alerts")
	}
	jobWords := wording.JobComposer{Jobs: store.Jobs, BaseURL: cfg.BaseURL}
	a.sender = alerts.NewSender(store.Outbox, storage.EvaluatorStore{Store: store}, mail, composer,
		alerts.SenderSettings{RemindEvery: cfg.Mail.RemindEvery, MaxReminders: reminders, Clock: o.Clock, Logger: o.Logger,
			Jobs: jobWords, SetAside: wording.SetAsideComposer{Kept: store.SetAside, BaseURL: cfg.BaseURL, Now: now}, Channels: store.Channels, Poster: poster, Notices: noticeComposer{composer, jobWords},
			Health: store.Status.DeliveryOf(locker.Identity()), Observe: m.ObserveNotification})
	if err := a.ensureLoopJobs(ctx); err != nil {
		// Not migrated yet, most likely; the loops' first passes try again.
		a.log.Info("Fusebox's own loops are not registered as jobs yet", "error", err)
	}
	built.Store(a)
	return a, nil
}

// useSecrets seals apps' and channels' secrets from now on, and seals
// those written before (plaintext, or under a key no longer first).
func useSecrets(ctx context.Context, cfg *config.Config, store *storage.Store, log *slog.Logger) error {
	keys := make([]sealed.Key, 0, len(cfg.SecretsKeys))
	for _, k := range cfg.SecretsKeys {
		keys = append(keys, sealed.Key{ID: k.ID, Secret: []byte(k.Key.Reveal())})
	}
	box, err := sealed.New(keys...)
	if err != nil {
		return fmt.Errorf("FUSEBOX_SECRETS_KEYS: %w", err)
	}
	store.UseSecrets(box)
	resealCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	apps, err := store.Apps.Reseal(resealCtx)
	if err != nil {
		log.Warn("could not seal the apps' secrets yet; the next start tries again", "sealed", apps)
	}
	channels, err := store.Channels.Reseal(resealCtx)
	if err != nil {
		log.Warn("could not seal the channels' secrets yet; the next start tries again", "sealed", channels)
	}
	jobsSealed, err := store.Jobs.Reseal(resealCtx)
	if err != nil {
		log.Warn("could not seal the jobs' ping tokens yet; the next start tries again", "sealed", jobsSealed)
	}
	if apps+channels+jobsSealed > 0 {
		log.Info("sealed secrets kept in plain text or under an older key", "apps", apps, "channels", channels, "jobs", jobsSealed)
	}
	return nil
}

// azureCredentials are the credential of trigger switches (ARM tokens only)
// and that of host insight (Storage and Event Hubs tokens only; a separate
// user-assigned identity when FUSEBOX_HOST_INSIGHT_CLIENT_ID names one).
// Either is nil when no Azure identity is to be had.
func azureCredentials(cfg *config.Config, o Options) (arm, insight azcore.TokenCredential) {
	base := o.ARMCredential
	if base == nil {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			o.Logger.Warn("no Azure credential: apps registered with the ARM or Container Apps switch cannot be switched, and host insight reads connection strings only")
			return nil, nil
		}
		base = cred
	}
	arm = egress.Scope(base, egress.ScopesARM...)
	insightBase := base
	if cfg.HostInsightClientID != "" && o.ARMCredential == nil {
		cred, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(cfg.HostInsightClientID)})
		if err != nil {
			o.Logger.Warn("the host-insight identity is not to be had: host insight reads connection strings only", "client_id", cfg.HostInsightClientID)
			return arm, nil
		}
		insightBase = cred
	}
	return arm, egress.ForStorageAndEventHubs(insightBase)
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
	g.Go(func() error {
		// Every instance writes what it received itself: no lease.
		a.arrivals.Run(ctx, 5*time.Second)
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		if err := a.stopTracing(context.WithoutCancel(ctx)); err != nil {
			a.log.Warn("could not flush traces", "error", err)
		}
		return nil
	})
	g.Go(func() error { return a.Locker.Run(ctx, BooksLease, a.keepBooks) })
	for _, l := range a.loops() {
		if l.lease == "" {
			g.Go(func() error { return a.everywhere(ctx, l.Loop) })
			continue
		}
		g.Go(func() error { return a.Locker.Run(ctx, l.lease, a.runner.Work(l.Loop)) })
	}
	return g.Wait()
}

// BooksLease is the lease whose holder keeps the evaluator's books: the
// status and totals the pages and metrics show, and the drift checks.
// Trips and switch calls need no lease: every instance makes them.
const BooksLease = "evaluator"

// keepBooks holds the books' lease until it is lost or the instance stops;
// the evaluator's ticks on this instance keep the books meanwhile.
func (a *App) keepBooks(ctx context.Context, f lease.Fence) error {
	a.books.Store(&f)
	defer a.books.Store(nil)
	a.evaluator.Poke() // the new keeper's first status now, not a tick later
	<-ctx.Done()
	return nil
}

// booksFence is the books' lease while this instance holds it.
func (a *App) booksFence() lease.Fence {
	if f := a.books.Load(); f != nil {
		return *f
	}
	return lease.Fence{}
}

// everywhere runs a loop that every instance runs, with no lease: its work
// is safe side by side (conditional writes, claims), and no instance's
// pause holds it up. A pass that overruns is logged and the loop goes on.
func (a *App) everywhere(ctx context.Context, l loop.Loop) error {
	for {
		err := a.runner.Work(l)(ctx, lease.Fence{})
		if ctx.Err() != nil {
			return nil
		}
		a.log.Warn("loop restarted", "loop", l.Name, "error", err)
		if err := a.clock.Sleep(ctx, l.Every); err != nil {
			return nil
		}
	}
}

func serveProtocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}

// Fusebox's own background loops are jobs too, so a loop that stops is a
// gap on the Jobs page like any other. Their ids are fixed.
var (
	loopPruner    = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000001", Name: "Fusebox: failure pruner", Schedule: "0 */10 * * * *", Grace: 10 * time.Minute}
	loopRollup    = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000002", Name: "Fusebox: failure roll-up", Schedule: "*/30 * * * * *", Grace: time.Minute}
	loopSweeper   = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000003", Name: "Fusebox: session sweeper", Schedule: "0 */10 * * * *", Grace: 10 * time.Minute}
	loopEvaluator = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000004", Name: "Fusebox: circuit evaluator", Schedule: "0 * * * * *", Grace: 2 * time.Minute}
	loopSender    = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000005", Name: "Fusebox: alert sender", Schedule: "0 * * * * *", Grace: 2 * time.Minute}
	loopScanner   = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000006", Name: "Fusebox: job scanner", Schedule: "0 * * * * *", Grace: 2 * time.Minute}
	loopVerifier  = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000007", Name: "Fusebox: trigger verifier", Schedule: "0 * * * * *", Grace: 2 * time.Minute}
	loopSampler   = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000008", Name: "Fusebox: host sampler", Schedule: "0 */5 * * * *", Grace: 5 * time.Minute}
	loopWatcher   = jobs.Job{ID: "f0c5b0c5-0000-4000-8000-000000000009", Name: "Fusebox: set-aside watcher", Schedule: "0 * * * * *", Grace: 2 * time.Minute}
	loopJobs      = []jobs.Job{loopPruner, loopRollup, loopSweeper, loopEvaluator, loopSender, loopScanner, loopVerifier, loopSampler, loopWatcher}
)

// EvaluatorLoop is the name under which the evaluator's health is kept.
const EvaluatorLoop = "evaluator"

type leasedLoop struct {
	lease string
	loop.Loop
}

// loops lists every background loop and the lease it runs under. Each
// loop's body belongs to the package that owns its work; this only says
// how often it runs and what it is recorded as.
func (a *App) loops() []leasedLoop {
	ls := []leasedLoop{
		// Every instance evaluates (no lease), so a frozen instance delays
		// no trip; a report that may trip a circuit is checked at once
		// (Nudge), and the tick is woken for what that check leaves to it.
		{"", loop.Loop{Name: EvaluatorLoop, JobID: loopEvaluator.ID, Every: a.evaluator.Interval(), Phase: a.phase, RecordEvery: time.Minute,
			Deadline: a.cfg.EvaluatorDeadline, Begin: a.evaluator.Begin, End: a.evaluator.Wait, Wake: a.evaluator.Wake(),
			Pass: func(ctx context.Context, _ lease.Fence) error { return a.evaluator.Tick(ctx, a.booksFence()) }}},
		// The scanner looks a quarter period after the minute and the half
		// minute, so that jobs that run on the minute (Fusebox's own loops
		// among them) have reported before it looks, rather than showing
		// "late" for the instant between their slot and their report.
		// The verifier reads what each host reports after a switch wrote,
		// every 5 s, until it agrees.
		{"circuits/verifier", loop.Loop{Name: "trigger_verifier", JobID: loopVerifier.ID, Every: 5 * time.Second, RecordEvery: time.Minute, Pass: a.verifier.Pass}},
		// The watcher looks at apps' poison and parking queues.
		{"setaside/watcher", loop.Loop{Name: "setaside_watcher", JobID: loopWatcher.ID, Every: a.setAsideEvery, RecordEvery: time.Minute, Pass: a.watchSetAside}},
		// The sampler keeps each app's learned concurrency every 5 minutes.
		{"host/sampler", loop.Loop{Name: "host_sampler", JobID: loopSampler.ID, Every: 5 * time.Minute, Pass: a.sampleHosts}},
		{"jobs/scanner", loop.Loop{Name: "jobs_scanner", JobID: loopScanner.ID, Every: 30 * time.Second, Phase: 15 * time.Second, Pass: a.scanner.Pass}},
		{"failures/pruner", loop.Loop{Name: "failures_pruner", JobID: loopPruner.ID, Every: 10 * time.Minute, Pass: func(ctx context.Context, _ lease.Fence) error {
			n, err := a.Store.Prune(ctx, a.now())
			if n > 0 {
				a.log.Info("old failure rows removed", "count", n)
			}
			return err
		}}},
		{"failures/rollup", loop.Loop{Name: "failures_rollup", JobID: loopRollup.ID, Every: 30 * time.Second, Pass: func(ctx context.Context, _ lease.Fence) error {
			return a.Store.Rates.RollupRecent(ctx, a.Store.Failures, a.now())
		}}},
		{"sessions/sweeper", loop.Loop{Name: "session_sweeper", JobID: loopSweeper.ID, Every: 10 * time.Minute, Pass: func(ctx context.Context, _ lease.Fence) error {
			_, err := a.Store.Sessions.DeleteExpired(ctx, a.now())
			return err
		}}},
		// The sender always runs (channels need no SMTP server), on every
		// instance: each message is claimed by a conditional write before
		// it is sent, so an instance frozen mid-send holds up only the
		// message it claimed.
		{"", loop.Loop{Name: "mail_sender", JobID: loopSender.ID, Every: time.Second, Phase: senderPhase(a.phase, a.evaluator.Interval()), RecordEvery: time.Minute, Pass: a.sender.Pass}},
	}
	return ls
}

// traceTransition records a transition the evaluator made as a span in
// the trace of the failure report behind it, and returns the context in
// which the switch call that applies it runs, so the ARM call is its child.
func traceTransition(ctx context.Context, c circuit.Circuit, fl circuit.Flip) context.Context {
	ctx = telemetry.WithRemoteParent(ctx, fl.TraceParent)
	ctx, span := telemetry.Tracer().Start(ctx, "circuit "+fl.To.String(), trace.WithAttributes(
		attribute.String("fusebox.app", c.AppID), attribute.String("fusebox.function", c.Function),
		attribute.Int64("fusebox.episode", fl.Episode), attribute.Int("fusebox.failures", fl.Count)))
	span.SetAttributes(attribute.String("fusebox.reason", fl.Reason))
	span.End()
	return ctx
}

// senderPhase starts this instance's sender passes half an evaluator
// interval after its evaluator's ticks, so that a pass comes soon after
// each trip this instance makes.
func senderPhase(evaluatorPhase, evaluatorEvery time.Duration) time.Duration {
	return (evaluatorPhase + min(evaluatorEvery, time.Second)/2) % time.Second
}

// ensureLoopJobs registers the loops as jobs, keeping any settings an
// operator changed since. It runs at start and again on each recorded
// pass until it succeeds, so an instance started before migrations still
// registers them.
func (a *App) ensureLoopJobs(ctx context.Context) error {
	if a.loopsRegistered.Load() {
		return nil
	}
	for _, j := range loopJobs {
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

func (a *App) handler() http.Handler {
	if a.wrap != nil {
		return a.wrap(a.Web.Handler())
	}
	return a.Web.Handler()
}

// loopRecorder records loop passes as runs of their jobs.
type loopRecorder struct{ a *App }

func (r loopRecorder) RecordPass(ctx context.Context, jobID string, at time.Time, passErr error) error {
	if err := r.a.ensureLoopJobs(ctx); err != nil {
		return fmt.Errorf("register Fusebox's own loops as jobs: %w", err)
	}
	ev := jobs.EventSuccess
	var log []byte
	if passErr != nil {
		ev, log = jobs.EventFailure, []byte(passErr.Error())
	}
	return pings(r.a.Store).Record(ctx, jobs.Job{ID: jobID}, jobs.Ping{Event: ev, Exit: -1, At: at, Body: log})
}

// reportService takes failure reports, from the HTTP API (and the
// OpenTelemetry receiver next).
func reportService(store *storage.Store, now func() time.Time, rowsPerSecond float64) *ingest.Service {
	instance := make([]byte, 6)
	_, _ = rand.Read(instance)
	var requests atomic.Int64
	return &ingest.Service{
		Router: ingest.New(store.Circuits, store.Rates, ingest.Settings{}), Failures: store.Failures, Claims: store.Status, Now: now,
		Budget: ingest.NewRowBudget(rowsPerSecond, 0),
		// One writer id per request: this process's random id and a counter.
		Writer: func() string { return fmt.Sprintf("api.%x.%d", instance, requests.Add(1)) },
	}
}

// pings records pings, from the ping API and from Fusebox's own loops.
func pings(store *storage.Store) jobs.Recorder {
	return jobs.Recorder{Runs: store.Runs, Jobs: store.Jobs, NewRunID: storage.NewRunID}
}

// noticeComposer writes notices about circuits and jobs for channels.
type noticeComposer struct {
	circuits wording.Composer
	jobs     wording.JobComposer
}

func (n noticeComposer) Notice(m alerts.Message, c circuit.Circuit, app circuit.App) (alerts.Notice, error) {
	return n.circuits.Notice(m, c, app)
}

func (n noticeComposer) JobNotice(ctx context.Context, m alerts.Message) (alerts.Notice, error) {
	return n.jobs.JobNotice(ctx, m)
}

// channelTester sends "send a test" messages: mail through the SMTP
// server, the others through the poster.
func channelTester(cfg *config.Config, smtp notify.SMTP, poster notify.Poster, now func() time.Time) func(context.Context, alerts.Channel) error {
	return func(ctx context.Context, ch alerts.Channel) error {
		n := alerts.TestNotice(ch, cfg.BaseURL.String(), now())
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if ch.Kind != alerts.ChannelMail {
			return poster.Post(ctx, ch, "test|"+ch.ID+"|"+strconv.FormatInt(now().UnixNano(), 10), n)
		}
		if cfg.Mail.Host == "" {
			return errors.New("mail is off on this instance: set FUSEBOX_SMTP_HOST")
		}
		return smtp.Send(ctx, alerts.Mail{To: ch.Addresses, Subject: "[Fusebox] " + n.Title, Text: n.Text + "\n\n" + n.LinkURL + "\n",
			HTML: "<p>" + html.EscapeString(n.Text) + "</p>", MessageID: fmt.Sprintf("<test-%d@fusebox>", now().UnixNano())})
	}
}

// sampleHosts records each app's learned concurrency, so circuit pages can
// draw its day. Apps are read one after another: each within its
// snapshot's time-out, off every other loop's path.
func (a *App) sampleHosts(ctx context.Context, _ lease.Fence) error {
	apps, err := a.Store.Apps.List(ctx)
	if err != nil {
		return err
	}
	now := a.now()
	var errs []error
	for _, app := range apps {
		snap, ok := a.hosts.Snapshot(ctx, app, now)
		if !ok || snap.Concurrency == nil {
			continue
		}
		for fn, n := range snap.Concurrency.Functions {
			if err := a.Store.HostSamples.PutConcurrency(ctx, app.ID, fn, now, n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// FlushTelemetry writes what this instance received over OpenTelemetry
// now, instead of at its next flush (every 5 s), for tests and shutdown.
func (a *App) FlushTelemetry(ctx context.Context) error { return a.arrivals.Flush(ctx) }
