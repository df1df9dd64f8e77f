// Package web is Fusebox's HTTP face: routes, middleware and thin handlers
// that bind input, call a service or repository, and render a view. Every
// route is listed in routes.go; each page action has its own file.
package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/fault"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/setaside/sendback"
	"github.com/fusebox/fusebox/static"
)

// The small interfaces handler groups hold, each the few methods its
// handlers call; internal/storage, the services and the lease.Locker
// satisfy them.
type (
	appReader interface {
		List(context.Context) ([]circuit.App, error)
		Get(ctx context.Context, id string) (circuit.App, error)
	}
	circuitLister interface {
		List(context.Context) ([]circuit.Circuit, error)
		// Recent may answer from this instance's last list (see listFreshness).
		Recent(ctx context.Context, maxAge time.Duration) ([]circuit.Circuit, error)
		Get(ctx context.Context, appID, function string) (circuit.Circuit, error)
		Flips(ctx context.Context, appID, function string, limit int) ([]circuit.Flip, error)
	}
	recentCircuits interface {
		// Recent may answer from this instance's last list (see listFreshness).
		Recent(ctx context.Context, maxAge time.Duration) ([]circuit.Circuit, error)
	}
	circuitsNow interface {
		List(context.Context) ([]circuit.Circuit, error)
		Recent(ctx context.Context, maxAge time.Duration) ([]circuit.Circuit, error)
	}
	circuitCounter interface {
		Counts(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
	}
	failingCounter interface {
		Failing(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
	}
	circuitSwitch interface {
		Trip(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
		Resume(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
		ResumeEach(ctx context.Context, ids []string, actor, reason string, acknowledge bool) []circuit.StormOutcome
		ResumeByLink(ctx context.Context, l circuit.LinkClaim, actor, reason string) (circuit.Circuit, error)
		ThrottleByLink(ctx context.Context, l circuit.LinkClaim, actor string) (circuit.Circuit, error)
		ApplyThrottle(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
		Acknowledge(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
	}
	settingsReader interface {
		Settings(ctx context.Context, app circuit.App) (map[string]string, error)
	}
	circuitSettings interface {
		Create(ctx context.Context, appID, function string, set circuit.Settings, actor string) (circuit.Circuit, error)
		Update(ctx context.Context, appID, function string, set circuit.Settings, actor string) (circuit.Circuit, error)
		Delete(ctx context.Context, appID, function, actor string) error
	}
	driftResolver interface {
		Adopt(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
		Override(ctx context.Context, appID, function, actor string) error
	}
	// channelChecker says which of the channel ids name no channel
	// (alerts.KnownChannels).
	channelChecker interface {
		Check(ctx context.Context, ids []string) error
	}
	functionRunner interface {
		Run(ctx context.Context, app circuit.App, function string) error
	}
	hostReader interface {
		Snapshot(ctx context.Context, app circuit.App, now time.Time) (hostinsight.Snapshot, bool)
		SnapshotAfter(ctx context.Context, app circuit.App, now, after time.Time) (hostinsight.Snapshot, bool)
		Aging(ctx context.Context, app circuit.App, ci circuit.Circuit, ps []hostinsight.Position, timeout time.Duration) (hostinsight.Retention, []hostinsight.Problem)
	}
	hostLocks interface {
		Snapshot(ctx context.Context, app circuit.App, now time.Time) (hostinsight.Snapshot, bool)
		Break(ctx context.Context, app circuit.App, blob string) error
	}
	setAsideReader interface {
		SetAside(ctx context.Context, app circuit.App, owners setaside.Owners) ([]queues.Found, error)
		Peek(ctx context.Context, app circuit.App, queue string, n, limit int) ([]queues.Message, error)
	}
	keptSetAside interface {
		OfApp(ctx context.Context, appID string) (setaside.AppSetAside, error)
		All(ctx context.Context) (map[string]setaside.AppSetAside, error)
	}
	sendBacker interface {
		Do(ctx context.Context, app circuit.App, mv queues.Move, by, reason string) (sendback.Outcome, error)
		Start(ctx context.Context, app circuit.App, mv queues.Move, by, reason string) error
	}
	hostSampleReader interface {
		Concurrency(ctx context.Context, appID, function string, from time.Time) ([]hostinsight.ConcurrencySample, error)
		Waiting(ctx context.Context, appID, function string, from, to time.Time) ([]hostinsight.WaitingSample, error)
	}
	appRegistry interface {
		Register(ctx context.Context, app circuit.App, actor string) (funcapp.Registered, error)
		ReplaceKey(ctx context.Context, app circuit.App, actor string) (string, error)
		UpdateHost(ctx context.Context, app circuit.App, h funcapp.HostChange, actor string) ([]string, error)
		Update(ctx context.Context, app circuit.App, s funcapp.Settings, actor string) ([]string, error)
	}
	functionTriggers interface {
		Functions(ctx context.Context, app circuit.App) ([]fleet.Function, error)
	}
	appInspector interface {
		Inspect(ctx context.Context, app circuit.App) (fleet.Inspection, error)
	}
	driftReader interface {
		Of(appID string) (fleet.AppDrift, bool)
	}
	appGuarding interface {
		Guard(ctx context.Context, p fleet.Plan, actor string) (funcapp.Guarded, error)
	}
	fleetFinder interface {
		Latest(ctx context.Context) (fleet.Survey, time.Time, error)
	}
	functionLister interface {
		Functions(ctx context.Context, app circuit.App) ([]string, error)
	}
	rateReader interface {
		Since(ctx context.Context, from time.Time) ([]circuit.MinuteCount, error)
		Of(ctx context.Context, appID, function string, from time.Time) ([]circuit.MinuteCount, error)
	}
	windowReader interface {
		Window(ctx context.Context, from, to time.Time) ([]circuit.FailureRow, []circuit.Rejection, error)
	}
	jobReader interface {
		List(context.Context) ([]jobs.Job, error)
		Get(ctx context.Context, id string) (jobs.Job, error)
		Flips(ctx context.Context, jobID string, limit int) ([]jobs.Flip, error)
	}
	jobLister interface {
		List(context.Context) ([]jobs.Job, error)
	}
	// pingJobs finds the job a ping names, by its ping id or its slug.
	pingJobs interface {
		Get(ctx context.Context, id string) (jobs.Job, error)
		BySlug(ctx context.Context, slug string) (jobs.Job, error)
	}
	maintenanceWindows interface {
		Windows(ctx context.Context) ([]jobs.Window, error)
		PutWindow(ctx context.Context, w jobs.Window) error
		EndWindow(ctx context.Context, id string, t time.Time) (jobs.Window, error)
	}
	pingTokens interface {
		RotatePingToken(ctx context.Context, id string) (string, error)
	}
	pingRecorder interface {
		Record(ctx context.Context, job jobs.Job, p jobs.Ping) error
	}
	jobCatalog interface {
		Create(ctx context.Context, j jobs.Job) error
		Update(ctx context.Context, j jobs.Job) error
		Delete(ctx context.Context, id string) error
	}
	jobCreator interface {
		Create(ctx context.Context, j jobs.Job) error
	}
	runReader interface {
		Between(ctx context.Context, jobID string, from, to time.Time, limit int) ([]jobs.Run, bool, error)
		Recent(ctx context.Context, jobID string, limit int, from jobs.RunCursor) ([]jobs.StoredRun, jobs.RunCursor, error)
	}
	outboxStore interface {
		Recent(ctx context.Context, limit int) ([]alerts.Message, error)
		Update(ctx context.Context, f lease.Fence, m alerts.Message) (alerts.Message, error)
	}
	faultLister interface {
		List() []fault.Row
	}
	statusReader interface {
		Evaluator(ctx context.Context) (circuit.Status, error)
	}
	otlpTaker interface {
		Take(ctx context.Context, e ingest.Export) (ingest.Answer, error)
	}
	arrivalReader interface {
		ArrivalsOf(ctx context.Context, appID string, from time.Time) ([]otlp.Arrival, error)
	}
	reportTaker interface {
		Take(ctx context.Context, b ingest.Batch) (ingest.Result, error)
	}
	leaseLister interface {
		List(context.Context) ([]lease.Record, error)
		Identity() string
	}
	channelStore interface {
		ListChannels(ctx context.Context) ([]alerts.Channel, error)
		Get(ctx context.Context, id string) (alerts.Channel, error)
		Create(ctx context.Context, ch alerts.Channel) error
		Update(ctx context.Context, ch alerts.Channel) error
		Delete(ctx context.Context, id string) error
	}
	deliveryReader interface {
		Delivery(ctx context.Context) ([]alerts.Health, error)
	}
	auditAppender interface {
		Append(context.Context, audit.Entry) error
	}
	auditLog interface {
		Append(context.Context, audit.Entry) error
		Recent(ctx context.Context, now time.Time, limit int) ([]audit.Entry, error)
	}
)

// Base is what every handler may use.
type Base struct {
	Config  *config.Config
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	Assets  *static.Assets
	Now     func() time.Time
	// StorageBudget bounds every storage call made under a context by a
	// deadline (tablestore.WithBudget); StorageDown says an error is
	// storage not answering (tablestore.Unreachable), answered 503.
	StorageBudget func(ctx context.Context, until time.Time) context.Context
	StorageDown   func(error) bool
}

// Identity is who may sign in and how: sessions, CSRF, local users, OpenID
// Connect, Easy Auth and API tokens. OIDC and EasyAuth are nil when off.
type Identity struct {
	Sessions *auth.Sessions
	CSRF     *auth.CSRF
	Local    *auth.LocalUsers
	OIDC     *auth.OIDC     `web:"optional"`
	EasyAuth *auth.EasyAuth `web:"optional"`
	Tokens   *auth.APITokens
}

// Parts are what the server is built from: what every handler may use, who
// may sign in, and each room's handlers with the few things they use. No
// handler sees another group's parts.
type Parts struct {
	Base     Base
	Identity Identity
	Intake   Intake
	SignIn   SignIn
	Circuits CircuitPages
	Apps     AppPages
	Jobs     JobPages
	Notify   NotifyPages
	Ops      OpsPages
}

// core is what every handler group shares: the base parts and the helpers
// that render pages, set cookies and answer errors.
type core struct {
	Base
	// refusals samples the log lines of refused requests.
	refusals *logSampler
}

// Server serves Fusebox over HTTP.
type Server struct {
	*core
	Identity // the people's middleware: sessions, CSRF, roles
	echo     *echo.Echo

	intake   *Intake
	signIn   *SignIn
	circuits *CircuitPages
	apps     *AppPages
	jobs     *JobPages
	notify   *NotifyPages
	ops      *OpsPages
}

// New builds the server and its routes.
func New(p Parts) (*Server, error) {
	if missing := p.missing(); len(missing) > 0 {
		return nil, fmt.Errorf("web: required parts are missing: %s", strings.Join(missing, ", "))
	}
	co := &core{Base: p.Base, refusals: newLogSampler(time.Minute)}
	// What viewers' pages read through ARM is kept per app (armreads.go).
	if p.Circuits.Inspector != nil {
		p.Circuits.Inspector = &keptInspector{appInspector: p.Circuits.Inspector}
	}
	if p.Apps.Triggers != nil {
		p.Apps.Triggers = &keptTriggers{functionTriggers: p.Apps.Triggers}
	}
	// A new job's id or slug may have been pinged before it existed: the
	// job pages forget it from the ping intake's list of unknown ids.
	unknownPings := newTTLSet(30*time.Second, 10_000)
	s := &Server{core: co, Identity: p.Identity, echo: echo.New(),
		intake: &p.Intake, signIn: &p.SignIn, circuits: &p.Circuits, apps: &p.Apps, jobs: &p.Jobs, notify: &p.Notify, ops: &p.Ops}
	s.intake.core, s.intake.unknownPings = co, unknownPings
	s.intake.pingCreates = rate.NewLimiter(pingCreatesPerHour/3600.0, pingCreatesPerHour)
	s.intake.pingSecrets = &pingSecrets{}
	s.signIn.core, s.signIn.identity = co, p.Identity
	s.circuits.core, s.apps.core, s.notify.core = co, co, co
	// The overview assesses jobs' weeks as the job pages do.
	weeks := &weekAssessor{apps: p.Jobs.Apps, windows: p.Jobs.Windows, runs: &jobs.RunCache{Runs: p.Jobs.RunReader, Now: p.Base.Now}, hosts: p.Jobs.HostInsight, now: p.Base.Now}
	s.jobs.core, s.jobs.weeks, s.jobs.unknownPings, s.jobs.pingSecrets = co, weeks, unknownPings, s.intake.pingSecrets
	s.ops.core, s.ops.weeks, s.ops.started, s.ops.readiness = co, weeks, p.Base.Now(), &readiness{}
	s.echo.HideBanner, s.echo.HidePort = true, true
	s.echo.HTTPErrorHandler = s.handleError
	s.echo.IPExtractor = clientIP(p.Base.Config.TrustProxyHeaders)
	s.routes()
	return s, nil
}

// missing names the required parts p lacks, as Group.Field: every
// exported field that can be nil is required unless tagged web:"optional".
func (p Parts) missing() []string {
	var out []string
	v := reflect.ValueOf(p)
	for i := range v.NumField() {
		group := v.Type().Field(i).Name
		g := v.Field(i)
		for j := range g.NumField() {
			f := g.Type().Field(j)
			if !f.IsExported() || f.Anonymous || f.Tag.Get("web") == "optional" {
				continue
			}
			switch fv := g.Field(j); fv.Kind() {
			case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Map, reflect.Slice:
				if fv.IsNil() {
					out = append(out, group+"."+f.Name)
				}
			}
		}
	}
	return out
}

// Handler returns the HTTP handler, for http.Server and tests.
func (s *Server) Handler() http.Handler { return s.echo }

// Routes lists the routes served, for tests that must cover every one.
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }
