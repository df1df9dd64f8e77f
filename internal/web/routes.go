package web

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/static"
)

// routes lists every route Fusebox serves. Two rooms share the port:
// machine intake (failure reports, OTLP exports, pings), with a short
// chain per route and none of the session machinery, and the people's
// pages and API, behind sign-in, CSRF and roles.
func (s *Server) routes() {
	e := s.echo
	e.Pre(middleware.RemoveTrailingSlash())
	// Every request: an id, one log line, a storage budget, a panic
	// answered as a 500, and the headers that keep a browser safe.
	e.Use(middleware.RequestID(), s.logRequests, s.storageBudget, s.recoverPanics, s.securityHeaders)
	// Pages, the JSON API and static files: a body limit (intake routes
	// have their own) and compression of larger answers.
	people := []echo.MiddlewareFunc{
		middleware.BodyLimit(bodyLimit(s.Config.MaxBodyBytes)),
		middleware.GzipWithConfig(middleware.GzipConfig{MinLength: 1024}),
	}

	// Open to all: probes, metrics and static files.
	e.GET("/healthz", s.ops.healthz)
	e.GET("/readyz", s.ops.readyz)
	e.GET("/metrics", s.ops.metricsHandler())
	e.GET(static.Prefix+"*", echo.WrapHandler(s.Assets.Handler()), people...)

	// Machine intake, with keys of its own. Each chain checks what costs
	// nothing first: the body's declared length, then the key (a storage
	// read only for keys not verified lately, ingest_gate.go), then the
	// app's budget; exports also wait for a decoding slot. Failure reports
	// are limited per app once their key verified (a fleet behind one NAT
	// address is one app's many instances), keys not yet verified per
	// client address, pings per client address. A flood answers 429 with
	// Retry-After and touches nothing.
	gate := s.intake.ingestGate()
	e.POST("/api/v1/failures", s.intake.failureIngest, middleware.BodyLimit(bodyLimit(min(IngestMaxBytes, s.Config.MaxBodyBytes))), gate)
	// The same reports as OpenTelemetry exports, behind the same key and
	// the same budget per app: OTLP/HTTP at /v1/… and /otlp/v1/…, OTLP/gRPC
	// on the same port (HTTP/2 without TLS: app.Serve).
	exportLimit := otlpBodyLimit()
	slots := newExportSlots(OTLPReadsAtOnce, OTLPReadsAtOncePerApp, OTLPReadsAtOncePerApp, 5*time.Second).reading
	for _, prefix := range []string{"", OTLPPrefix} {
		e.POST(prefix+"/v1/traces", s.intake.otlpHTTP(otlp.Traces), exportLimit, gate, slots)
		e.POST(prefix+"/v1/logs", s.intake.otlpHTTP(otlp.Logs), exportLimit, gate, slots)
		e.POST(prefix+"/v1/metrics", s.intake.otlpHTTP(""), exportLimit, gate) // accepted, not decoded
	}
	grpcExports := s.intake.otlpGRPC()
	for _, method := range []string{grpcTraces, grpcLogs, grpcMetrics} {
		e.POST(method, grpcExports, grpcAnswers, exportLimit, gate, slots)
	}
	// Pings from jobs, as Healthchecks.io takes them: each reads its own
	// body, cutting a long log rather than refusing it.
	pingLimit := machineLimit(s.Config.PingRateLimit, func(c echo.Context) string { return c.RealIP() },
		"too many pings from your address; retry after a second")
	for _, p := range []string{"/ping/:a", "/ping/:a/:b", "/ping/:a/:b/:c"} {
		e.Match([]string{http.MethodGet, http.MethodHead, http.MethodPost}, p, s.intake.ping, pingLimit)
	}
	// Azure Monitor's action groups, behind the secret in the path: the
	// same budget per client address as pings, a body of its own limit.
	alertLimit := middleware.BodyLimit(bodyLimit(min(azalerts.MaxBody, s.Config.MaxBodyBytes)))
	e.POST("/hooks/azure-monitor/:secret", s.intake.azureAlert, alertLimit, pingLimit)
	e.POST("/hooks/azure-monitor", s.intake.azureAlertSecure, alertLimit, pingLimit)
	// Status badges: public behind an unguessable key.
	e.GET("/badge/:key/:file", s.jobs.badge, slices.Concat(people, []echo.MiddlewareFunc{pingLimit})...)

	// The JSON API: an API token, or a session with CSRF for changes.
	api := e.Group("/api/v1", slices.Concat(people, []echo.MiddlewareFunc{s.apiAuth, s.require(auth.RoleViewer)})...)
	apiOperator := s.require(auth.RoleOperator)
	api.GET("/circuits", s.circuits.apiCircuitList)
	api.POST("/circuits", s.circuits.apiCircuitCreate, apiOperator)
	api.POST("/circuits/resume", s.switches.apiCircuitsResume, apiOperator)
	api.GET("/circuits/:app/:function", s.circuits.apiCircuitShow)
	api.GET("/circuits/:app/:function/host", s.hostPanels.apiCircuitHost)
	api.GET("/circuits/:app/:function/episodes/:episode", s.circuits.apiCircuitEpisode)
	api.GET("/apps", s.apps.apiAppList)
	api.POST("/apps", s.apps.apiAppCreate, apiOperator)
	api.GET("/apps/:app", s.apps.apiAppShow)
	api.PUT("/apps/:app", s.apps.apiAppUpdate, apiOperator)
	api.GET("/apps/:app/queues", s.apps.apiAppQueues)
	api.POST("/apps/:app/queues/:queue/requeue", s.apps.apiAppQueueAction(true), apiOperator)
	api.POST("/apps/:app/queues/:queue/delete", s.apps.apiAppQueueAction(false), apiOperator)
	api.PUT("/circuits/:app/:function", s.circuits.apiCircuitUpdate, apiOperator)
	api.DELETE("/circuits/:app/:function", s.circuits.apiCircuitDelete, apiOperator)
	api.POST("/circuits/:app/:function/trip", s.switches.apiCircuitAction("trip"), apiOperator)
	api.POST("/circuits/:app/:function/resume", s.switches.apiCircuitAction("resume"), apiOperator)
	api.GET("/circuits/:app/:function/replay", s.switches.apiCircuitReplay)
	api.GET("/downstreams", s.downstreams.apiDownstreamList)
	api.POST("/downstreams", s.downstreams.apiDownstreamCreate, apiOperator)
	api.GET("/downstreams/:id", s.downstreams.apiDownstreamShow)
	api.PUT("/downstreams/:id", s.downstreams.apiDownstreamPut, apiOperator)
	api.DELETE("/downstreams/:id", s.downstreams.apiDownstreamDelete, apiOperator)
	api.POST("/downstreams/:id/trip", s.downstreams.apiDownstreamAction("trip"), apiOperator)
	api.POST("/downstreams/:id/resume", s.downstreams.apiDownstreamAction("resume"), apiOperator)
	apiAdmin := s.require(auth.RoleAdmin)
	api.GET("/me", s.teamPages.apiMe)
	api.GET("/teams", s.teamPages.apiTeamList, apiAdmin)
	api.GET("/alerts", s.ops.apiAlertList, apiAdmin)
	api.PUT("/teams/:team", s.teamPages.apiTeamPut, apiAdmin)
	api.DELETE("/teams/:team", s.teamPages.apiTeamDelete, apiAdmin)
	api.GET("/tokens", s.tokenPages.apiTokenList, apiOperator)
	api.POST("/tokens", s.tokenPages.apiTokenIssue, apiOperator)
	api.DELETE("/tokens/:id", s.tokenPages.apiTokenRevoke, apiOperator)
	api.GET("/jobs", s.jobs.apiJobList)
	api.POST("/jobs", s.jobs.apiJobSave, apiOperator)
	api.GET("/jobs/:id", s.jobs.apiJobShow)
	api.PUT("/jobs/:id", s.jobs.apiJobSave, apiOperator)
	api.DELETE("/jobs/:id", s.jobs.apiJobDelete, apiOperator)
	api.GET("/jobs/:id/runs", s.jobs.apiJobRuns)
	api.GET("/jobs/:id/flips", s.jobs.apiJobFlips)
	api.POST("/jobs/:id/run", s.jobs.jobRun, apiOperator)
	api.POST("/jobs/:id/ping-token", s.jobs.jobRotatePingToken, apiOperator)
	api.GET("/channels", s.notify.apiChannelList)
	api.POST("/channels", s.notify.apiChannelSave, apiOperator)
	api.PUT("/channels/:id", s.notify.apiChannelSave, apiOperator)
	api.DELETE("/channels/:id", s.notify.apiChannelDelete, apiOperator)
	api.POST("/channels/:id/test", s.notify.apiChannelTest, apiOperator)
	api.POST("/circuits/:app/:function/acknowledge", s.switches.apiCircuitAcknowledge, apiOperator)
	api.GET("/maintenance", s.windowPages.apiMaintenanceList)
	api.POST("/maintenance", s.windowPages.apiMaintenanceCreate, apiOperator)
	api.POST("/maintenance/:id/end", s.windowPages.apiMaintenanceEnd, apiOperator)

	// Pages for people: signed in or not, every form is CSRF-checked.
	web := e.Group("", slices.Concat(people, []echo.MiddlewareFunc{s.csrf, s.loadPrincipal})...)
	// Sign-in attempts and resume links each have a budget per client
	// address, apart: a flood of one locks nobody out of the other.
	loginLimit := s.attemptLimit()
	web.GET("/login", s.signIn.loginShow)
	web.POST("/login", s.signIn.loginSubmit, loginLimit)
	web.POST("/logout", s.signIn.logoutSubmit)
	web.GET("/auth/oidc/login", s.signIn.oidcBegin, loginLimit)
	web.GET("/auth/oidc/callback", s.signIn.oidcCallback, loginLimit)
	// Resume links from e-mail: no sign-in needed unless configured, rate
	// limited per client; GET shows, only POST acts.
	linkLimit := s.attemptLimit()
	web.GET("/resume/:token", s.links.resumeShow, linkLimit)
	web.POST("/resume/:token", s.links.resumeSubmit, linkLimit)
	web.POST("/resume/:token/acknowledge", s.links.resumeAck, linkLimit)
	web.GET("/throttle/:token", s.links.throttleShow, linkLimit)
	web.POST("/throttle/:token", s.links.throttleSubmit, linkLimit)

	viewer := web.Group("", s.require(auth.RoleViewer))
	viewer.GET("/", s.ops.overviewShow)
	viewer.GET("/circuits", s.circuits.circuitList)
	viewer.GET("/circuits/new", s.circuits.circuitNew, s.require(auth.RoleOperator))
	viewer.POST("/circuits/new", s.circuits.circuitCreate, s.require(auth.RoleOperator))
	viewer.GET("/circuits/resume", s.switches.stormShow, s.require(auth.RoleOperator))
	viewer.POST("/circuits/resume", s.switches.stormSubmit, s.require(auth.RoleOperator))
	viewer.GET("/circuits/:app/:function", s.circuits.circuitShow)
	viewer.GET("/circuits/:app/:function/waiting", s.hostPanels.circuitWaiting)
	viewer.GET("/circuits/:app/:function/throttle-plan", s.switches.circuitThrottlePlan)
	viewer.GET("/circuits/:app/:function/episodes/:episode", s.circuits.circuitEpisode)
	viewer.GET("/downstreams", s.downstreams.downstreamList)
	viewer.POST("/downstreams", s.downstreams.downstreamCreate, s.require(auth.RoleOperator))
	viewer.GET("/downstreams/:id", s.downstreams.downstreamShow)
	viewer.POST("/downstreams/:id", s.downstreams.downstreamUpdate, s.require(auth.RoleOperator))
	viewer.POST("/downstreams/:id/delete", s.downstreams.downstreamDelete, s.require(auth.RoleOperator))
	viewer.POST("/downstreams/:id/trip", s.downstreams.downstreamAction("trip"), s.require(auth.RoleOperator))
	viewer.POST("/downstreams/:id/try", s.downstreams.downstreamAction("try"), s.require(auth.RoleOperator))
	viewer.POST("/downstreams/:id/resume", s.downstreams.downstreamAction("resume"), s.require(auth.RoleOperator))
	viewer.GET("/jobs", s.jobs.jobList)
	viewer.GET("/jobs/new", s.jobs.jobNew, s.require(auth.RoleOperator))
	viewer.POST("/jobs/new", s.jobs.jobSave, s.require(auth.RoleOperator))
	viewer.GET("/jobs/maintenance", s.windowPages.maintenanceList)
	viewer.POST("/jobs/maintenance", s.windowPages.maintenanceCreate, s.require(auth.RoleOperator))
	viewer.POST("/jobs/maintenance/:id/end", s.windowPages.maintenanceEnd, s.require(auth.RoleOperator))
	viewer.GET("/jobs/:id", s.jobs.jobShow)
	viewer.GET("/jobs/:id/edit", s.jobs.jobEdit, s.require(auth.RoleOperator))
	viewer.POST("/jobs/:id/edit", s.jobs.jobSave, s.require(auth.RoleOperator))
	viewer.POST("/jobs/:id/run", s.jobs.jobRun, s.require(auth.RoleOperator))
	viewer.POST("/jobs/:id/ping-token", s.jobs.jobRotatePingToken, s.require(auth.RoleOperator))
	// Fusebox's own: its loops' locks, and the teams.
	admin := s.require(auth.RoleAdmin)
	viewer.GET("/locks", s.ops.lockList, admin)
	viewer.GET("/locks/host/break", s.ops.hostLockConfirm, admin)
	viewer.POST("/locks/host/break", s.ops.hostLockBreak, admin)
	viewer.GET("/alerts", s.ops.alertList, admin)
	viewer.GET("/teams", s.teamPages.teamList, admin)
	viewer.POST("/teams", s.teamPages.teamCreate, admin)
	viewer.GET("/teams/:team/edit", s.teamPages.teamEdit, admin)
	viewer.POST("/teams/:team/edit", s.teamPages.teamUpdate, admin)
	viewer.POST("/teams/:team/delete", s.teamPages.teamDelete, admin)
	viewer.GET("/audit", s.ops.auditList)
	viewer.GET("/tokens", s.tokenPages.tokenList, s.require(auth.RoleOperator))
	viewer.POST("/tokens", s.tokenPages.tokenIssue, s.require(auth.RoleOperator))
	viewer.POST("/tokens/:id/revoke", s.tokenPages.tokenRevoke, s.require(auth.RoleOperator))
	viewer.GET("/apps", s.apps.appList)
	viewer.GET("/notifications", s.notify.outboxList)
	viewer.GET("/mail", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/notifications") })
	viewer.POST("/notifications/resend", s.notify.outboxResend, s.require(auth.RoleOperator))
	viewer.GET("/channels", s.notify.channelList)
	viewer.GET("/channels/new", s.notify.channelNew, s.require(auth.RoleOperator))
	viewer.POST("/channels/new", s.notify.channelCreate, s.require(auth.RoleOperator))
	viewer.GET("/channels/:id/edit", s.notify.channelEdit, s.require(auth.RoleOperator))
	viewer.POST("/channels/:id/edit", s.notify.channelUpdate, s.require(auth.RoleOperator))
	viewer.POST("/channels/:id/delete", s.notify.channelDelete, s.require(auth.RoleOperator))
	viewer.POST("/channels/:id/test", s.notify.channelTest, s.require(auth.RoleOperator))
	// Discovering and guarding reads every site of the subscriptions:
	// admins', who choose the team an app goes in.
	viewer.GET("/apps/discover", s.apps.appDiscover, admin)
	viewer.GET("/apps/:app/functions", s.apps.appFunctions)
	viewer.GET("/apps/new", s.apps.appNew, s.require(auth.RoleOperator))
	viewer.POST("/apps/new", s.apps.appCreate, s.require(auth.RoleOperator))
	viewer.GET("/apps/discover/guard", s.apps.appGuardShow, admin)
	viewer.POST("/apps/discover/guard", s.apps.appGuard, admin)
	viewer.POST("/apps/:app/key", s.apps.appKey, s.require(auth.RoleOperator))
	viewer.GET("/apps/:app/queues", s.apps.appQueuesShow)
	viewer.GET("/apps/:app/queues/:queue", s.apps.queueShow)
	viewer.POST("/apps/:app/queues/:queue/act", s.apps.queueAct, s.require(auth.RoleOperator))
	viewer.GET("/apps/:app/host/edit", s.apps.appHost, s.require(auth.RoleOperator))
	viewer.POST("/apps/:app/host/edit", s.apps.appHostSave, s.require(auth.RoleOperator))

	// Operator routes carry the check per route: a group with middleware
	// would also answer every unknown path with 403.
	operator := s.require(auth.RoleOperator)
	viewer.GET("/circuits/:app/:function/trip", s.switches.circuitConfirm("trip"), operator)
	viewer.POST("/circuits/:app/:function/trip", s.switches.circuitTrip, operator)
	viewer.GET("/circuits/:app/:function/resume", s.switches.circuitConfirm("resume"), operator)
	viewer.POST("/circuits/:app/:function/resume", s.switches.circuitResume, operator)
	viewer.POST("/circuits/:app/:function/acknowledge", s.switches.circuitAcknowledge, operator)
	viewer.POST("/circuits/:app/:function/throttle", s.switches.circuitThrottle, operator)
	viewer.POST("/circuits/:app/:function/drift/adopt", s.switches.circuitDriftAdopt, operator)
	viewer.POST("/circuits/:app/:function/drift/override", s.switches.circuitDriftOverride, operator)
	viewer.GET("/circuits/:app/:function/edit", s.circuits.circuitEdit, operator)
	viewer.POST("/circuits/:app/:function/edit", s.circuits.circuitUpdate, operator)
	viewer.POST("/circuits/:app/:function/delete", s.circuits.circuitDelete, operator)
}

// attemptLimit is a budget of FUSEBOX_LOGIN_RATE_LIMIT attempts a second
// per client address, loginBurst at once, in bounded memory: echo's own
// store kept every address for 5 minutes however many came.
func (s *Server) attemptLimit() echo.MiddlewareFunc {
	l := newKeyedLimiter(s.Config.LoginRateLimit, loginBurst)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !l.allow(c.RealIP()) {
				return s.rateLimitError(c, "", nil)
			}
			return next(c)
		}
	}
}

func isPing(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/ping/") }
