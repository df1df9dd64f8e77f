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

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/metrics"
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
