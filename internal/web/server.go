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

// core is what every handler group shares: the base parts and the helpers
// that render pages, set cookies and answer errors.
type core struct {
	Base
	*Services
	// What viewers' pages read through ARM is kept per app (armreads.go);
	// nil without an Azure identity.
	inspections  *keptInspector
	triggerLists *keptTriggers
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
	switches    *SwitchPages
	links       *LinkPages
	hostPanels  *HostPanels
	downstreams *DownstreamPages
	apps        *AppPages
	jobs        *JobPages
	notify      *NotifyPages
	ops         *OpsPages
	teamPages   *TeamPages
	tokenPages  *TokenPages
	windowPages *WindowPages
}

// New builds the server and its routes over the services.
func New(base Base, id Identity, svc *Services) (*Server, error) {
	if missing := append(append(base.missing(), id.missing()...), svc.missing()...); len(missing) > 0 {
		return nil, fmt.Errorf("web: required parts are missing: %s", strings.Join(missing, ", "))
	}
	co := &core{Base: base, Services: svc, refusals: newLogSampler(time.Minute), teams: id.Teams, policy: id.Policy, tally: &intakeTally{}}
	if svc.Discoverer != nil {
		co.inspections = &keptInspector{d: svc.Discoverer}
		co.triggerLists = &keptTriggers{d: svc.Discoverer}
	}
	// A new job's id or slug may have been pinged before it existed: the
	// job pages forget it from the ping intake's list of unknown ids.
	unknownPings := newTTLSet(30*time.Second, 10_000)
	secrets := &pingSecrets{}
	// The overview assesses jobs' weeks as the job pages do.
	weeks := &weekAssessor{apps: svc.Apps, windows: svc.Windows, runs: &jobs.RunCache{Runs: svc.Runs, Now: base.Now}, hosts: svc.HostInsight, now: base.Now}
	hosts := &HostPanels{core: co}
	circuits := &CircuitPages{core: co, hosts: hosts}
	switches := &SwitchPages{core: co, hosts: hosts, pages: circuits}
	links := &LinkPages{core: co, hosts: hosts, switches: switches, pages: circuits}
	switches.links = links
	s := &Server{core: co, Identity: id, echo: echo.New(),
		intake: &Intake{core: co, unknownPings: unknownPings, pingSecrets: secrets,
			pingCreates: rate.NewLimiter(pingCreatesPerHour/3600.0, pingCreatesPerHour),
			decoding:    newExportSlots(OTLPExportsAtOnce, OTLPExportsAtOncePerApp, OTLPExportReserve, 5*time.Second)},
		signIn:      &SignIn{core: co, identity: id},
		circuits:    circuits,
		switches:    switches,
		links:       links,
		hostPanels:  hosts,
		downstreams: &DownstreamPages{core: co},
		apps:        &AppPages{core: co},
		jobs:        &JobPages{core: co, weeks: weeks, unknownPings: unknownPings, pingSecrets: secrets},
		notify:      &NotifyPages{core: co},
		ops:         &OpsPages{core: co, weeks: weeks, started: base.Now(), readiness: &readiness{}},
		teamPages:   &TeamPages{core: co},
		tokenPages:  &TokenPages{core: co, issued: id.Issued},
		windowPages: &WindowPages{core: co},
	}
	s.echo.HideBanner, s.echo.HidePort = true, true
	s.echo.HTTPErrorHandler = s.handleError
	s.echo.IPExtractor = clientIP(base.Config.TrustProxyHeaders)
	s.routes()
	return s, nil
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
