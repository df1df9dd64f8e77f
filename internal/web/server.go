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

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/static"
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
	OIDC     *auth.OIDC     // nil: off
	EasyAuth *auth.EasyAuth // nil: off
	Tokens   *auth.APITokens
	// Issued verifies the tokens people issue on the Tokens page.
	Issued *auth.Issued
	// Teams maps people to teams, and so to the apps they may see.
	Teams *teams.Directory
	// Policy says who may see and change what.
	Policy *access.Policy
}

// Parts are what the server is built from: what every handler may use, who
// may sign in, and each room's handlers with the few things they use. No
// handler sees another group's parts.
type Parts struct {
	Base     Base
	Identity Identity
	Intake   IntakeParts
	SignIn   SignInParts
	Circuits CircuitParts
	Apps     AppParts
	Jobs     JobParts
	Notify   NotifyParts
	Ops      OpsParts
}

// core is what every handler group shares: the base parts and the helpers
// that render pages, set cookies and answer errors.
type core struct {
	Base
	// refusals samples the log lines of refused requests.
	refusals *logSampler
	// teams maps people to teams (Identity.Teams); policy says who may
	// see and change what.
	teams  *teams.Directory
	policy *access.Policy
	// tally counts accepted machine calls for the minute's summary.
	tally *intakeTally
}

// Server serves Fusebox over HTTP.
type Server struct {
	*core
	Identity // the people's middleware: sessions, CSRF, roles
	echo     *echo.Echo

	intake      *Intake
	signIn      *SignIn
	circuits    *CircuitPages
	downstreams *DownstreamPages
	apps        *AppPages
	jobs        *JobPages
	notify      *NotifyPages
	ops         *OpsPages
	teamPages   *TeamPages
	tokenPages  *TokenPages
	windowPages *WindowPages
}

// New builds the server and its routes.
func New(p Parts) (*Server, error) {
	if missing := p.missing(); len(missing) > 0 {
		return nil, fmt.Errorf("web: required parts are missing: %s", strings.Join(missing, ", "))
	}
	co := &core{Base: p.Base, refusals: newLogSampler(time.Minute), teams: p.Identity.Teams, policy: p.Identity.Policy, tally: &intakeTally{}}
	// What viewers' pages read through ARM is kept per app (armreads.go).
	circuits, apps := p.Circuits, p.Apps
	if circuits.Inspector != nil {
		circuits.Inspector = &keptInspector{appInspector: circuits.Inspector}
	}
	if apps.Triggers != nil {
		apps.Triggers = &keptTriggers{functionTriggers: apps.Triggers}
	}
	// A new job's id or slug may have been pinged before it existed: the
	// job pages forget it from the ping intake's list of unknown ids.
	unknownPings := newTTLSet(30*time.Second, 10_000)
	secrets := &pingSecrets{}
	// The overview assesses jobs' weeks as the job pages do.
	weeks := &weekAssessor{apps: p.Jobs.Apps, windows: p.Jobs.Windows, runs: &jobs.RunCache{Runs: p.Jobs.RunReader, Now: p.Base.Now}, hosts: p.Jobs.HostInsight, now: p.Base.Now}
	s := &Server{core: co, Identity: p.Identity, echo: echo.New(),
		intake: &Intake{IntakeParts: p.Intake, core: co, unknownPings: unknownPings, pingSecrets: secrets,
			pingCreates: rate.NewLimiter(pingCreatesPerHour/3600.0, pingCreatesPerHour),
			decoding:    newExportSlots(OTLPExportsAtOnce, OTLPExportsAtOncePerApp, OTLPExportReserve, 5*time.Second)},
		signIn:   &SignIn{SignInParts: p.SignIn, core: co, identity: p.Identity},
		circuits: &CircuitPages{CircuitParts: circuits, core: co},
		downstreams: &DownstreamPages{core: co, Downstreams: circuits.Downstreams, Keeper: circuits.Keeper, Audit: circuits.Audit,
			Apps: circuits.Apps, Circuits: circuits.Circuits, Counter: circuits.Counter, Channels: circuits.Channels,
			Samples: circuits.Samples, Calls: circuits.Calls, History: circuits.History},
		apps:        &AppPages{AppParts: apps, core: co},
		jobs:        &JobPages{JobParts: p.Jobs, core: co, weeks: weeks, unknownPings: unknownPings, pingSecrets: secrets},
		notify:      &NotifyPages{NotifyParts: p.Notify, core: co},
		ops:         &OpsPages{OpsParts: p.Ops, core: co, weeks: weeks, started: p.Base.Now(), readiness: &readiness{}},
		teamPages:   &TeamPages{core: co, Apps: p.Ops.Apps, AppTeams: p.Ops.AppTeams, TeamStore: p.Ops.TeamStore, Channels: p.Ops.Channels, Audit: p.Ops.Audit},
		tokenPages:  &TokenPages{core: co, Tokens: p.Ops.Tokens, Issued: p.Ops.Issued, Audit: p.Ops.Audit},
		windowPages: &WindowPages{core: co, Apps: p.Jobs.Apps, Windows: p.Jobs.Windows, Audit: p.Jobs.Audit},
	}
	s.echo.HideBanner, s.echo.HidePort = true, true
	s.echo.HTTPErrorHandler = s.handleError
	s.echo.IPExtractor = clientIP(p.Base.Config.TrustProxyHeaders)
	s.routes()
	return s, nil
}

// missing names the required parts p lacks, as Group.Field; what may be
// off (OpenID Connect, Easy Auth, what needs an Azure identity) is not
// asked for.
func (p Parts) missing() []string {
	var out []string
	for _, m := range [][]string{p.Base.missing(), p.Identity.missing(), p.Intake.missing(), p.SignIn.missing(), p.Circuits.missing(),
		p.Apps.missing(), p.Jobs.missing(), p.Notify.missing(), p.Ops.missing()} {
		out = append(out, m...)
	}
	return out
}

func (b Base) missing() []string {
	return absent("Base",
		part{"Config", b.Config == nil},
		part{"Logger", b.Logger == nil},
		part{"Metrics", b.Metrics == nil},
		part{"Assets", b.Assets == nil},
		part{"Now", b.Now == nil},
		part{"StorageBudget", b.StorageBudget == nil},
		part{"StorageDown", b.StorageDown == nil},
	)
}

func (id Identity) missing() []string {
	return absent("Identity",
		part{"Sessions", id.Sessions == nil},
		part{"CSRF", id.CSRF == nil},
		part{"Local", id.Local == nil},
		part{"Tokens", id.Tokens == nil},
		part{"Issued", id.Issued == nil},
	)
}

// part is one part a group needs, and whether it is nil.
type part struct {
	name  string
	isNil bool
}

// absent names, as group.name, the parts that are nil.
func absent(group string, parts ...part) []string {
	var out []string
	for _, p := range parts {
		if p.isNil {
			out = append(out, group+"."+p.name)
		}
	}
	return out
}

// Handler returns the HTTP handler, for http.Server and tests.
func (s *Server) Handler() http.Handler { return s.echo }

// Routes lists the routes served, for tests that must cover every one.
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }
