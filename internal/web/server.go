// Package web is Fusebox's HTTP face: routes, middleware and thin handlers
// that bind input, call a service or repository, and render a view. Every
// route is listed in routes.go; each page action has its own file.
package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/fault"
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

// The small interfaces handlers need, satisfied by internal/storage and
// the lease.Locker.
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
	circuitActions interface {
		Counts(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
		Failing(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
		Trip(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
		Resume(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
		ResumeEach(ctx context.Context, ids []string, actor, reason string, acknowledge bool) []circuit.StormOutcome
		ResumeByLink(ctx context.Context, l circuit.LinkClaim, actor, reason string) (circuit.Circuit, error)
		Adopt(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
		Override(ctx context.Context, appID, function, actor string) error
		Create(ctx context.Context, appID, function string, set circuit.Settings, actor string) (circuit.Circuit, error)
		Update(ctx context.Context, appID, function string, set circuit.Settings, actor string) (circuit.Circuit, error)
		Delete(ctx context.Context, appID, function, actor string) error
		Acknowledge(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
		CheckChannels(ctx context.Context, ids []string) error
	}
	functionRunner interface {
		Run(ctx context.Context, app circuit.App, function string) error
	}
	hostReader interface {
		Snapshot(ctx context.Context, app circuit.App, now time.Time) (hostinsight.Snapshot, bool)
		SnapshotAfter(ctx context.Context, app circuit.App, now, after time.Time) (hostinsight.Snapshot, bool)
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
	}
	appRegistry interface {
		Register(ctx context.Context, app circuit.App, actor string) (funcapp.Registered, error)
		ReplaceKey(ctx context.Context, app circuit.App, actor string) (string, error)
		UpdateHost(ctx context.Context, app circuit.App, h funcapp.HostChange, actor string) ([]string, error)
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
	jobStore interface {
		List(context.Context) ([]jobs.Job, error)
		Get(ctx context.Context, id string) (jobs.Job, error)
		BySlug(ctx context.Context, slug string) (jobs.Job, error)
		Windows(ctx context.Context) ([]jobs.Window, error)
		PutWindow(ctx context.Context, w jobs.Window) error
		EndWindow(ctx context.Context, id string, t time.Time) (jobs.Window, error)
		Flips(ctx context.Context, jobID string, limit int) ([]jobs.Flip, error)
		RotatePingToken(ctx context.Context, id string) (string, error)
	}
	pingRecorder interface {
		Record(ctx context.Context, job jobs.Job, p jobs.Ping) error
	}
	jobCatalog interface {
		Create(ctx context.Context, j jobs.Job) error
		Update(ctx context.Context, j jobs.Job) error
	}
	runReader interface {
		Between(ctx context.Context, jobID string, from, to time.Time) ([]jobs.Run, error)
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
	auditLog interface {
		Append(context.Context, audit.Entry) error
		Recent(ctx context.Context, now time.Time, limit int) ([]audit.Entry, error)
	}
)

// Deps is everything the web layer uses. OIDC and EasyAuth are nil when off.
type Deps struct {
	Base
	Identity
	CircuitDeps
	JobDeps
	NotifyDeps
	Ops
}

// NotifyDeps serve alert channels and the state of deliveries.
type NotifyDeps struct {
	Channels channelStore
	// TestChannel sends a test message to a channel now.
	TestChannel func(ctx context.Context, ch alerts.Channel) error
	// Delivery reads the destinations the sender finds failing.
	Delivery deliveryReader
}

// Base is what every handler may use.
type Base struct {
	Config  *config.Config
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	Assets  *static.Assets
	Now     func() time.Time
	// Endpoints are the storage and Event Hubs endpoints an app's host
	// insight may name.
	Endpoints egress.Endpoints
	// StorageBudget bounds every storage call made under a context by a
	// deadline (tablestore.WithBudget); StorageDown says an error is
	// storage not answering (tablestore.Unreachable), answered 503.
	StorageBudget func(ctx context.Context, until time.Time) context.Context
	StorageDown   func(error) bool
}

// Identity is who may sign in and how: sessions, CSRF, local users, OpenID
// Connect, Easy Auth and API tokens.
type Identity struct {
	Sessions *auth.Sessions
	CSRF     *auth.CSRF
	Local    *auth.LocalUsers
	OIDC     *auth.OIDC
	EasyAuth *auth.EasyAuth
	Tokens   *auth.APITokens
	// AppKeys verify the keys of failure reports and OTLP exports.
	AppKeys *auth.AppKeys
}

// CircuitDeps serve the apps, circuits, failures and resume links.
type CircuitDeps struct {
	Registry appRegistry
	Apps     appReader
	Circuits circuitLister
	Actions  circuitActions
	// Reports take failure reports: where a report becomes rows
	// (ingest.Service).
	Reports reportTaker
	// OTLP counts what function hosts export over OpenTelemetry
	// (ingest.Exports); Arrivals reads what arrived, for the Apps page.
	OTLP     otlpTaker
	Arrivals arrivalReader
	Window   windowReader
	Rates    rateReader
	Status   statusReader
	// Links verifies resume links.
	Links  *alerts.Signer
	Outbox outboxStore
	// FunctionLister lists an app's functions for the circuit form's
	// picker; nil leaves the picker empty.
	FunctionLister functionLister
	// HostInsight reads apps' own storage for the circuit and resume
	// pages; nil shows none.
	HostInsight hostReader
	// HostSamples hold the hosts' learned concurrency over time; nil
	// draws no history.
	HostSamples hostSampleReader
	// Queues reads the work apps set aside (poison and parking queues),
	// Kept is what the watcher last saw of them, and SendBack requeues or
	// deletes them; with Queues nil none of it is shown.
	Queues   setAsideReader
	Kept     keptSetAside
	SendBack sendBacker
}

// JobDeps serve jobs, their runs and pings.
type JobDeps struct {
	Jobs      jobStore
	Pings     pingRecorder // where a ping becomes a run (jobs.Recorder)
	Catalog   jobCatalog   // saves jobs by the jobs' rules (jobs.Catalog)
	RunReader runReader
	// FunctionRunner runs a job's function once for "Run now"; nil hides it.
	FunctionRunner functionRunner
}

// Ops are what operators look at about Fusebox itself.
type Ops struct {
	Audit  auditLog
	Leases leaseLister
	// Faults lists stored rows that could not be read.
	Faults faultLister
	// Ready reports whether Fusebox can serve: storage reachable and
	// migrations applied.
	Ready func(context.Context) error
}

// Server serves Fusebox over HTTP.
type Server struct {
	Deps
	echo    *echo.Echo
	started time.Time // readiness allows the first ticks their time

	// unknownPings are ping ids found not to exist lately (a new job's id
	// is forgotten here when the job is created).
	unknownPings *ttlSet
	readiness    readiness // the last /readyz answer, for a second
	// pingCreates bounds the jobs the ping key's ?create=1 makes.
	pingCreates *rate.Limiter
	// refusals samples the log lines of refused requests.
	refusals *logSampler
}

// New builds the server and its routes.
func New(d Deps) (*Server, error) {
	if missing := d.missing(); len(missing) > 0 {
		return nil, fmt.Errorf("web: required dependencies are missing: %s", strings.Join(missing, ", "))
	}
	s := &Server{Deps: d, echo: echo.New(), started: d.Now(), unknownPings: newTTLSet(30*time.Second, 10_000),
		pingCreates: rate.NewLimiter(pingCreatesPerHour/3600.0, pingCreatesPerHour), refusals: newLogSampler(time.Minute)}
	s.echo.HideBanner, s.echo.HidePort = true, true
	s.echo.HTTPErrorHandler = s.handleError
	s.echo.IPExtractor = clientIP(d.Config.TrustProxyHeaders)
	s.routes()
	return s, nil
}

// missing names the required dependencies d lacks, as Group.Field.
func (d Deps) missing() []string {
	required := []struct {
		name string
		nil  bool
	}{
		{"Base.Config", d.Config == nil}, {"Base.Logger", d.Logger == nil}, {"Base.Metrics", d.Metrics == nil}, {"Base.Assets", d.Assets == nil}, {"Base.Now", d.Now == nil}, {"Base.StorageBudget", d.StorageBudget == nil}, {"Base.StorageDown", d.StorageDown == nil},
		{"Identity.Sessions", d.Sessions == nil}, {"Identity.CSRF", d.CSRF == nil}, {"Identity.Local", d.Local == nil}, {"Identity.Tokens", d.Tokens == nil}, {"Identity.AppKeys", d.AppKeys == nil},
		{"CircuitDeps.Registry", d.Registry == nil}, {"CircuitDeps.Apps", d.Apps == nil}, {"CircuitDeps.Circuits", d.Circuits == nil}, {"CircuitDeps.Actions", d.Actions == nil},
		{"CircuitDeps.Reports", d.Reports == nil}, {"CircuitDeps.OTLP", d.OTLP == nil}, {"CircuitDeps.Arrivals", d.Arrivals == nil}, {"CircuitDeps.Window", d.Window == nil},
		{"CircuitDeps.Rates", d.Rates == nil}, {"CircuitDeps.Status", d.Status == nil}, {"CircuitDeps.Outbox", d.Outbox == nil},
		{"JobDeps.Jobs", d.Jobs == nil}, {"JobDeps.Pings", d.Pings == nil}, {"JobDeps.Catalog", d.Catalog == nil}, {"JobDeps.RunReader", d.RunReader == nil},
		{"NotifyDeps.Channels", d.Channels == nil}, {"NotifyDeps.TestChannel", d.TestChannel == nil}, {"NotifyDeps.Delivery", d.Delivery == nil},
		{"Ops.Audit", d.Audit == nil}, {"Ops.Leases", d.Leases == nil}, {"Ops.Faults", d.Faults == nil}, {"Ops.Ready", d.Ready == nil},
	}
	var out []string
	for _, r := range required {
		if r.nil {
			out = append(out, r.name)
		}
	}
	return out
}

// Handler returns the HTTP handler, for http.Server and tests.
func (s *Server) Handler() http.Handler { return s.echo }

// Routes lists the routes served, for tests that must cover every one.
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }
