// Package config reads Fusebox's settings from FUSEBOX_* environment
// variables once, at start-up, into a Config that is passed down explicitly.
//
// Load reports every problem it finds at once, each naming the variable and
// the fix, so an operator can correct a deployment in one pass.
package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/fusebox/fusebox/internal/teams"
	"time"
)

// Environment selects defaults that differ between a developer's machine and
// a deployment: log format and how loudly problems are reported.
type Environment string

const (
	Development Environment = "development"
	Production  Environment = "production"
)

// Config is every setting Fusebox reads. Secrets are held as their own type
// so that formatting a Config never prints them.
type Config struct {
	Env      Environment
	LogLevel string // debug, info, warn or error

	HTTPAddr            string
	BaseURL             *url.URL // where browsers reach Fusebox; its scheme decides Secure cookies
	MaxBodyBytes        int64
	TrustProxyHeaders   bool // take the client address from X-Forwarded-For (only behind a proxy you control)
	ShutdownGracePeriod time.Duration

	Storage        Storage
	MigrateOnStart bool
	Session        Session
	LocalUsers     []LocalUser
	APITokens      []APIToken // for scripts calling /api/v1
	OIDC           *OIDC      // nil when OpenID Connect is off
	EasyAuth       bool       // trust App Service's X-MS-CLIENT-PRINCIPAL header (only where App Service says authentication is on)
	RoleClaim      string
	AdminClaims    []string // claim values that grant the admin role
	OperatorClaims []string // claim values that grant the operator role on every app
	ViewerClaims   []string // claim values that grant the viewer role on every app
	// TeamClaim is a second claim whose values teams map (Entra ID's
	// "groups"); TeamMembers map claim values and local users to teams.
	TeamClaim   string
	TeamMembers []TeamMember
	// TeamScopes say where in Azure each team's apps may live
	// (FUSEBOX_TEAM_SCOPES: team:scope, ...), beside those given on the
	// Teams page.
	TeamScopes     []TeamScope
	LoginRateLimit float64 // sign-in attempts per second per client address
	// PingRateLimit is pings per second per client address, and
	// IngestRateLimit failure reports per second per app; each may burst
	// to ten times its rate.
	PingRateLimit   float64
	IngestRateLimit float64
	// IngestRowLimit is the rows per second one app's reports may write,
	// whatever their number, in bursts of 25 full requests.
	IngestRowLimit float64
	MetricsToken   Secret // when set, /metrics needs "Authorization: Bearer <token>"
	// AzureAlertsSecret, when set, takes Azure Monitor's action groups'
	// webhooks at /hooks/azure-monitor/<secret> (they cannot send headers).
	AzureAlertsSecret Secret
	// PauseExpiry is what Fusebox does with a pause as long as the hub
	// keeps events: "warn" (ask, by hand; warn on the page and before a
	// window opens) or "refuse".
	PauseExpiry string
	// AzureAlertsEntra, when set, takes them at /hooks/azure-monitor with
	// the secure webhook's Entra ID token instead (or as well).
	AzureAlertsEntra *AzureAlertsEntra
	// MetricsOpen states that /metrics may answer without a token in
	// production (a network that keeps strangers out); without it and a
	// token, production refuses to start.
	MetricsOpen bool
	// AzureCloud names the Azure cloud whose storage and Event Hubs
	// endpoints host insight may read: public, usgov or china.
	AzureCloud string
	// EgressAllow are private address ranges outbound calls may reach
	// (the private endpoints of guarded apps' storage); every other
	// private, loopback and link-local address is refused.
	EgressAllow []netip.Prefix
	// DiscoverSubscriptions are the subscriptions whose function apps the
	// Apps page's Discover lists (Reader on each is enough); empty: none.
	DiscoverSubscriptions []string
	// HostInsightClientID is the client id of a user-assigned managed
	// identity for host insight's reads, kept apart from the identity that
	// switches triggers; empty: the same identity.
	HostInsightClientID string
	// SecretsKeys seal the secrets kept in Table Storage (apps' host
	// storage and Event Hubs, channels' URLs and secrets); the first seals,
	// all open. Without FUSEBOX_SECRETS_KEYS, one key "s" is the session key.
	SecretsKeys []KeyEntry
	PingKey     Secret // enables /ping/<key>/<slug>; empty: only /ping/<token>
	// PingIDGrace is how long a job made before ping tokens keeps
	// answering to its id after migration 11 gave it a token; 0: no more.
	PingIDGrace time.Duration
	// HostLockBreakAfter is how long a function app's lock must have been
	// seen held before an operator may break it.
	HostLockBreakAfter time.Duration
	// LocalSwitchRoot is the directory below which, outside development,
	// apps may use the local switch; empty: nowhere.
	LocalSwitchRoot string
	// LocalSwitchDelay makes the local switch take this long to write, as
	// ARM's writes take seconds: to try failover by hand, and for the
	// fault tests that freeze an instance mid-switch. Development only.
	LocalSwitchDelay time.Duration
	// Leases time the leases under which background work runs once across
	// instances: how long before a silent holder is replaced, how long a
	// holder acts without renewing, how often it renews.
	Leases LeaseTiming
	// EvaluatorInterval is the time between evaluator ticks.
	EvaluatorInterval time.Duration
	// EvaluatorDeadline is how long one tick may run before the instance
	// gives up the evaluator's lease to another.
	EvaluatorDeadline time.Duration
	// DriftCheckInterval is how often the evaluator reads triggers back.
	DriftCheckInterval time.Duration
	Mail               Mail
}

// Storage says how to reach Azure Table Storage: either a connection string
// (shared key, SAS or the Azurite development account) or an account URL
// used with a managed identity.
type Storage struct {
	ConnectionString Secret
	AccountURL       string
	TablePrefix      string
}

// Session configures the sign-in cookie.
type Session struct {
	Key Secret // signs session and CSRF cookies; at least 32 bytes
	TTL time.Duration
}

// LocalUser is a person defined in configuration, for development and
// small installations. Only the bcrypt hash of the password is known.
type LocalUser struct {
	Name string
	// Role is admin, viewer or operator on every app, or roles on teams'
	// apps: operator@billing+viewer@orders (teams.ParseGrants).
	Role         string
	PasswordHash Secret
}

// Mail configures alert mail and its signed links.
type Mail struct {
	Host     string // empty: mail is off
	Port     int
	Username string
	Password Secret
	TLS      string // mandatory, opportunistic or none
	From     string
	// LinkKeys sign resume links; the first signs new links, all verify.
	LinkKeys     []KeyEntry
	LinkTTL      time.Duration
	ResumeSignIn bool // resume links also need a signed-in operator
	RemindEvery  time.Duration
	MaxReminders int
}

// KeyEntry is one key of a rotating list (FUSEBOX_LINK_KEYS,
// FUSEBOX_SECRETS_KEYS): the first is used, all are accepted.
type KeyEntry struct {
	ID  string
	Key Secret
}

// APIToken lets a script call the JSON API with a role. Only the SHA-256 of
// the token is configured.
type APIToken struct {
	Name string
	Role string
	Hash Secret // hex SHA-256 of the token
}

// OIDC configures sign-in through an OpenID Connect provider such as Entra ID.
type OIDC struct {
	Issuer       string
	ClientID     string
	ClientSecret Secret
	Scopes       []string
	DisplayName  string
	// RoleMaxAge is how long a session keeps the role the provider's
	// claims gave it before they are read again; default 5m.
	RoleMaxAge time.Duration
}

// Secret is a string that never prints itself.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return "[redacted]" }

// Reveal returns the secret's value, for the one place that needs it.
func (s Secret) Reveal() string { return string(s) }

// DevelopmentStorage is the connection string of Azurite's well-known
// development account. The SDK does not understand the
// UseDevelopmentStorage=true shorthand, so Load expands it to this.
const DevelopmentStorage = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
	"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
	"BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;" +
	"TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;" +
	"QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;"

// Roles a signed-in person can hold. An operator can do everything a viewer can.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

var (
	tablePrefixPattern  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,39}$`)
	userNamePattern     = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)
	subscriptionPattern = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
)

// Load builds a Config from the environment. lookup is os.LookupEnv in
// production and a map in tests.
func Load(lookup func(string) (string, bool)) (*Config, error) {
	r := reader{lookup: lookup}
	c := &Config{
		Env:                 Environment(strings.ToLower(r.str("FUSEBOX_ENV", string(Production)))),
		LogLevel:            strings.ToLower(r.str("FUSEBOX_LOG_LEVEL", "info")),
		HTTPAddr:            r.str("FUSEBOX_HTTP_ADDR", "127.0.0.1:8080"),
		MaxBodyBytes:        r.whole("FUSEBOX_MAX_BODY_BYTES", 1<<20, "a whole number of bytes, such as 1048576"),
		TrustProxyHeaders:   r.bool("FUSEBOX_TRUST_PROXY_HEADERS", false),
		ShutdownGracePeriod: r.duration("FUSEBOX_SHUTDOWN_GRACE", 15*time.Second),
		MigrateOnStart:      r.bool("FUSEBOX_MIGRATE_ON_START", true),
		EasyAuth:            r.bool("FUSEBOX_EASYAUTH_ENABLED", false),
		RoleClaim:           r.str("FUSEBOX_ROLE_CLAIM", "roles"),
		AdminClaims:         r.list("FUSEBOX_ADMIN_CLAIM_VALUES"),
		TeamClaim:           r.str("FUSEBOX_TEAM_CLAIM", "groups"),
		OperatorClaims:      r.list("FUSEBOX_OPERATOR_CLAIM_VALUES"),
		ViewerClaims:        r.list("FUSEBOX_VIEWER_CLAIM_VALUES"),
		LoginRateLimit:      r.float("FUSEBOX_LOGIN_RATE_LIMIT", 1),
		PingRateLimit:       r.float("FUSEBOX_PING_RATE_LIMIT", 20),
		IngestRateLimit:     r.float("FUSEBOX_INGEST_RATE_LIMIT", 100),
		IngestRowLimit:      r.float("FUSEBOX_INGEST_ROW_LIMIT", 500),
		MetricsToken:        Secret(r.str("FUSEBOX_METRICS_TOKEN", "")),
		AzureAlertsSecret:   Secret(r.str("FUSEBOX_AZURE_ALERTS_SECRET", "")),
		PauseExpiry:         r.str("FUSEBOX_PAUSE_EXPIRY", "warn"),
		AzureAlertsEntra:    r.azureAlertsEntra(),
		MetricsOpen:         r.bool("FUSEBOX_METRICS_OPEN", false),
		PingKey:             Secret(r.str("FUSEBOX_PING_KEY", "")),
		PingIDGrace:         r.duration("FUSEBOX_PING_ID_GRACE", 30*24*time.Hour),
		LocalSwitchRoot:     r.str("FUSEBOX_LOCAL_SWITCH_ROOT", ""),
		LocalSwitchDelay:    r.duration("FUSEBOX_LOCAL_SWITCH_DELAY", 0),
		Leases: LeaseTiming{
			Duration:      r.duration("FUSEBOX_LEASE_DURATION", 15*time.Second),
			RenewDeadline: r.duration("FUSEBOX_LEASE_RENEW_DEADLINE", 10*time.Second),
			RetryPeriod:   r.duration("FUSEBOX_LEASE_RETRY_PERIOD", 2*time.Second),
		},
		EvaluatorInterval:   r.duration("FUSEBOX_EVALUATOR_INTERVAL", time.Second),
		EvaluatorDeadline:   r.duration("FUSEBOX_EVALUATOR_DEADLINE", 30*time.Second),
		DriftCheckInterval:  r.duration("FUSEBOX_DRIFT_CHECK_INTERVAL", 30*time.Second),
		HostLockBreakAfter:  r.duration("FUSEBOX_HOST_LOCK_BREAK_AFTER", 10*time.Minute),
		AzureCloud:          strings.ToLower(r.str("FUSEBOX_AZURE_CLOUD", "public")),
		HostInsightClientID: r.str("FUSEBOX_HOST_INSIGHT_CLIENT_ID", ""),
	}
	switch c.AzureCloud {
	case "public", "usgov", "china":
	default:
		r.fail("FUSEBOX_AZURE_CLOUD", "must be public, usgov or china, got %q", c.AzureCloud)
	}
	for _, v := range r.list("FUSEBOX_EGRESS_ALLOW_CIDRS") {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			r.fail("FUSEBOX_EGRESS_ALLOW_CIDRS", "must be address ranges such as 10.20.0.0/24, got %q", v)
			continue
		}
		c.EgressAllow = append(c.EgressAllow, p.Masked())
	}
	for _, v := range r.list("FUSEBOX_DISCOVER_SUBSCRIPTIONS") {
		if !subscriptionPattern.MatchString(v) {
			r.fail("FUSEBOX_DISCOVER_SUBSCRIPTIONS", "must be subscription ids (GUIDs) separated by commas, got %q", v)
			continue
		}
		c.DiscoverSubscriptions = append(c.DiscoverSubscriptions, strings.ToLower(v))
	}
	if c.EasyAuth {
		r.easyAuthPlatform()
	}

	switch c.Env {
	case Development, Production:
	default:
		r.fail("FUSEBOX_ENV", "must be %q or %q, got %q", Development, Production, c.Env)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		r.fail("FUSEBOX_LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		r.fail("FUSEBOX_HTTP_ADDR", "must be host:port such as 127.0.0.1:8080 or :8080, got %q", c.HTTPAddr)
	}
	c.BaseURL = r.baseURL(c.HTTPAddr)
	if c.Env == Production && c.BaseURL.Scheme != "https" {
		// Cookies lose Secure and __Host-, no HSTS is sent, and the OIDC
		// callback and mailed links point at an address nobody can open.
		r.fail("FUSEBOX_BASE_URL", "must be the https URL people open in production, such as https://fusebox.example.com (on App Service and Container Apps it is derived from WEBSITE_HOSTNAME or CONTAINER_APP_NAME and CONTAINER_APP_ENV_DNS_SUFFIX when unset); got %s", c.BaseURL)
	}
	if c.MaxBodyBytes < 1024 {
		r.fail("FUSEBOX_MAX_BODY_BYTES", "must be at least 1024 bytes")
	}
	if c.PingRateLimit <= 0 {
		r.fail("FUSEBOX_PING_RATE_LIMIT", "must be more than 0 pings per second per client address, got %v", c.PingRateLimit)
	}
	if c.IngestRateLimit <= 0 {
		r.fail("FUSEBOX_INGEST_RATE_LIMIT", "must be more than 0 reports per second per app, got %v", c.IngestRateLimit)
	}
	if c.IngestRowLimit <= 0 {
		r.fail("FUSEBOX_INGEST_ROW_LIMIT", "must be more than 0 rows per second per app, got %v", c.IngestRowLimit)
	}
	if c.LoginRateLimit <= 0 {
		r.fail("FUSEBOX_LOGIN_RATE_LIMIT", "must be a positive number of attempts per second, such as 1")
	}

	if c.EvaluatorInterval < 100*time.Millisecond || c.EvaluatorInterval > time.Minute {
		r.fail("FUSEBOX_EVALUATOR_INTERVAL", "must be between 100ms and 1m, got %s", c.EvaluatorInterval)
	}
	if c.EvaluatorDeadline < 3*c.EvaluatorInterval || c.EvaluatorDeadline > 10*time.Minute {
		r.fail("FUSEBOX_EVALUATOR_DEADLINE", "must be at least three evaluator intervals and at most 10m, got %s", c.EvaluatorDeadline)
	}
	if c.DriftCheckInterval < time.Second || c.DriftCheckInterval > time.Hour {
		r.fail("FUSEBOX_DRIFT_CHECK_INTERVAL", "must be between 1s and 1h, got %s", c.DriftCheckInterval)
	}
	if c.PingKey != "" && (len(c.PingKey) < 16 || strings.ContainsAny(c.PingKey.Reveal(), "/?#")) {
		r.fail("FUSEBOX_PING_KEY", "must be at least 16 characters without / ? or #, when set")
	}
	if l := c.Leases; l.RetryPeriod < 100*time.Millisecond || l.RenewDeadline <= l.RetryPeriod || l.Duration <= l.RenewDeadline || l.Duration > 5*time.Minute {
		r.fail("FUSEBOX_LEASE_DURATION", "leases need FUSEBOX_LEASE_DURATION > FUSEBOX_LEASE_RENEW_DEADLINE > FUSEBOX_LEASE_RETRY_PERIOD >= 100ms, and a duration of at most 5m; got %s > %s > %s", l.Duration, l.RenewDeadline, l.RetryPeriod)
	}
	if c.HostLockBreakAfter < 0 {
		r.fail("FUSEBOX_HOST_LOCK_BREAK_AFTER", "must not be negative")
	}
	if c.LocalSwitchDelay < 0 || c.LocalSwitchDelay > 10*time.Second {
		r.fail("FUSEBOX_LOCAL_SWITCH_DELAY", "must be between 0 and 10s, got %s", c.LocalSwitchDelay)
	}
	if c.LocalSwitchDelay > 0 && c.Env != Development {
		r.fail("FUSEBOX_LOCAL_SWITCH_DELAY", "slows every local switch on purpose: development only")
	}
	if c.LocalSwitchRoot != "" && !filepath.IsAbs(c.LocalSwitchRoot) {
		r.fail("FUSEBOX_LOCAL_SWITCH_ROOT", "must be an absolute directory, such as /srv/functions")
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		r.fail("FUSEBOX_METRICS_TOKEN", "must be at least 16 characters when set")
	}
	if s := c.AzureAlertsSecret; s != "" && (len(s) < 32 || len(s) > 128 || strings.ContainsFunc(string(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})) {
		r.fail("FUSEBOX_AZURE_ALERTS_SECRET", "must be 32 to 128 letters, digits, - or _ (it is a path segment of the action group's webhook URL): openssl rand -hex 32 makes one")
	}
	if c.PauseExpiry != "warn" && c.PauseExpiry != "refuse" {
		r.fail("FUSEBOX_PAUSE_EXPIRY", "must be warn (a pause longer than the hub keeps events is asked about, and warned of before it opens) or refuse, got %q", c.PauseExpiry)
	}
	if c.Env == Production && c.MetricsToken == "" && !c.MetricsOpen {
		r.fail("FUSEBOX_METRICS_TOKEN", "is needed in production: /metrics says which circuits are open and which jobs are down. Set it (at least 16 characters) and give it to the scraper, or set FUSEBOX_METRICS_OPEN=true where the network already keeps strangers out")
	}
	if c.PingIDGrace < 0 {
		r.fail("FUSEBOX_PING_ID_GRACE", "must not be negative (0 ends pings by job id now)")
	}
	c.Storage = r.storage()
	c.Session = Session{
		Key: Secret(r.str("FUSEBOX_SESSION_KEY", "")),
		TTL: r.duration("FUSEBOX_SESSION_TTL", 12*time.Hour),
	}
	if len(c.Session.Key) < 32 {
		r.fail("FUSEBOX_SESSION_KEY", "must be at least 32 random characters; generate one with: openssl rand -base64 48")
	}
	if c.Session.TTL < time.Minute || c.Session.TTL > 30*24*time.Hour {
		r.fail("FUSEBOX_SESSION_TTL", "must be between 1m and 720h, got %s", c.Session.TTL)
	}

	c.Mail = r.mail(c.Session.Key)
	c.SecretsKeys = r.secretsKeys(c.Session.Key)
	c.LocalUsers = r.localUsers()
	c.APITokens = r.apiTokens()
	c.OIDC = r.oidc()
	if c.RoleClaim == "" {
		r.fail("FUSEBOX_ROLE_CLAIM", "must name the claim that carries roles or groups, such as roles or groups")
	}
	c.TeamMembers = r.teamMembers()
	c.TeamScopes = r.teamScopes()
	if (c.OIDC != nil || c.EasyAuth) && len(c.AdminClaims)+len(c.OperatorClaims)+len(c.ViewerClaims)+len(c.TeamMembers) == 0 {
		r.fail("FUSEBOX_OPERATOR_CLAIM_VALUES", "set it (and/or FUSEBOX_VIEWER_CLAIM_VALUES) to the %s claim values that grant each role; without them nobody signing in through OpenID Connect or Easy Auth gets a role", c.RoleClaim)
	}
	if len(c.LocalUsers) == 0 && c.OIDC == nil && !c.EasyAuth {
		r.fail("FUSEBOX_LOCAL_USERS", "no sign-in method is configured: set FUSEBOX_LOCAL_USERS, FUSEBOX_OIDC_ISSUER or FUSEBOX_EASYAUTH_ENABLED=true")
	}

	if err := errors.Join(r.problems...); err != nil {
		return nil, fmt.Errorf("configuration is invalid:\n%w", err)
	}
	return c, nil
}

// LoadStorage reads only what commands that touch storage and nothing else
// need (fusebox migrate, fusebox seed-demo): environment, log level and
// storage. It validates them as Load does.
func LoadStorage(lookup func(string) (string, bool)) (*Config, error) {
	r := reader{lookup: lookup}
	c := &Config{
		Env:      Environment(strings.ToLower(r.str("FUSEBOX_ENV", string(Production)))),
		LogLevel: strings.ToLower(r.str("FUSEBOX_LOG_LEVEL", "info")),
		Storage:  r.storage(),
	}
	if err := errors.Join(r.problems...); err != nil {
		return nil, fmt.Errorf("configuration is invalid:\n%w", err)
	}
	return c, nil
}

// SecureCookies reports whether cookies must carry the Secure attribute:
// whenever browsers reach Fusebox over TLS.
func (c *Config) SecureCookies() bool { return c.BaseURL.Scheme == "https" }

type reader struct {
	lookup   func(string) (string, bool)
	problems []error
}

func (r *reader) fail(name, format string, args ...any) {
	r.problems = append(r.problems, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

func (r *reader) str(name, def string) string {
	v, ok := r.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	return strings.TrimSpace(v)
}

func (r *reader) list(name string) []string {
	var out []string
	for _, v := range strings.Split(r.str(name, ""), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (r *reader) bool(name string, def bool) bool {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, "must be true or false, got %q", v)
		return def
	}
	return b
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(name, "must be a duration such as 30s, 15m or 12h, got %q", v)
		return def
	}
	return d
}

func (r *reader) float(name string, def float64) float64 {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.fail(name, "must be a number, got %q", v)
		return def
	}
	return f
}

// whole reads a whole number; want says what it must be in the error,
// such as "a whole number of bytes, such as 1048576".
func (r *reader) whole(name string, def int64, want string) int64 {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(name, "must be %s, got %q", want, v)
		return def
	}
	return n
}

func (r *reader) baseURL(addr string) *url.URL {
	raw := r.str("FUSEBOX_BASE_URL", "")
	if raw == "" {
		raw = r.platformURL()
	}
	if raw == "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		return &url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		r.fail("FUSEBOX_BASE_URL", "must be an absolute http(s) URL without a path, such as https://fusebox.example.com, got %q", raw)
		return &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}
	}
	u.Path = ""
	return u
}

// platformURL is the https URL the hosting platform gives the app: App
// Service's WEBSITE_HOSTNAME, or Container Apps' app name under its
// environment's DNS suffix; "" elsewhere.
func (r *reader) platformURL() string {
	if host := r.str("WEBSITE_HOSTNAME", ""); host != "" {
		return "https://" + host
	}
	name, suffix := r.str("CONTAINER_APP_NAME", ""), r.str("CONTAINER_APP_ENV_DNS_SUFFIX", "")
	if name != "" && suffix != "" {
		return "https://" + name + "." + suffix
	}
	return ""
}

func (r *reader) storage() Storage {
	s := Storage{
		ConnectionString: Secret(r.str("FUSEBOX_STORAGE_CONNECTION_STRING", "")),
		AccountURL:       r.str("FUSEBOX_STORAGE_ACCOUNT_URL", ""),
		TablePrefix:      r.str("FUSEBOX_TABLE_PREFIX", "fusebox"),
	}
	if !tablePrefixPattern.MatchString(s.TablePrefix) {
		r.fail("FUSEBOX_TABLE_PREFIX", "must start with a letter and hold only letters and digits, at most 40, got %q", s.TablePrefix)
	}
	switch {
	case s.ConnectionString != "" && s.AccountURL != "":
		r.fail("FUSEBOX_STORAGE_CONNECTION_STRING", "set either it or FUSEBOX_STORAGE_ACCOUNT_URL, not both")
	case s.ConnectionString == "" && s.AccountURL == "":
		r.fail("FUSEBOX_STORAGE_CONNECTION_STRING", "is required (or FUSEBOX_STORAGE_ACCOUNT_URL with a managed identity); for Azurite use UseDevelopmentStorage=true")
	case s.ConnectionString != "":
		cs, err := normalizeConnectionString(s.ConnectionString.Reveal())
		if err != nil {
			// The value may hold an account key: name the problem, never echo the value.
			r.fail("FUSEBOX_STORAGE_CONNECTION_STRING", "%v", err)
		}
		s.ConnectionString = Secret(cs)
	default:
		u, err := url.Parse(s.AccountURL)
		if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			r.fail("FUSEBOX_STORAGE_ACCOUNT_URL", "must be the table endpoint, such as https://myaccount.table.core.windows.net, got %q", s.AccountURL)
		}
	}
	return s
}

// normalizeConnectionString expands the development shorthand and checks
// that the string has the parts the table client needs.
func normalizeConnectionString(cs string) (string, error) {
	parts := map[string]string{}
	for _, p := range strings.Split(cs, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return "", errors.New("is not a connection string: every part must be Name=value, separated by ';'")
		}
		parts[strings.ToLower(k)] = v
	}
	if strings.EqualFold(parts["usedevelopmentstorage"], "true") {
		if proxy := parts["developmentstorageproxyuri"]; proxy != "" {
			return "", errors.New("DevelopmentStorageProxyUri is not supported; give Azurite's full connection string instead")
		}
		return DevelopmentStorage, nil
	}
	if parts["accountname"] == "" {
		return "", errors.New("has no AccountName; copy the full connection string from the storage account's Access keys page")
	}
	if parts["accountkey"] == "" && parts["sharedaccesssignature"] == "" {
		return "", errors.New("has neither AccountKey nor SharedAccessSignature; copy the full connection string from the storage account's Access keys page")
	}
	if ep := parts["tableendpoint"]; ep != "" {
		if u, err := url.Parse(ep); err != nil || u.Host == "" {
			return "", errors.New("has a TableEndpoint that is not an absolute URL")
		}
	}
	return cs, nil
}

// AzureAlertsEntra is what an action group's secure webhook token must
// say: issued by the tenant for Fusebox's app registration, to the action
// groups' service principal (the app role it was given, the application
// it is, or both: at least one, or any service principal of the tenant
// could post alerts).
type AzureAlertsEntra struct {
	Tenant, Audience, Issuer, KeysURL string
	// Role is an app role the token must carry; AppID the caller's
	// application id it must name (appid, or azp in v2 tokens).
	Role, AppID string
}

func (r *reader) azureAlertsEntra() *AzureAlertsEntra {
	e := &AzureAlertsEntra{Tenant: r.str("FUSEBOX_AZURE_ALERTS_TENANT", ""), Audience: r.str("FUSEBOX_AZURE_ALERTS_AUDIENCE", ""),
		Issuer: r.str("FUSEBOX_AZURE_ALERTS_ISSUER", ""), KeysURL: r.str("FUSEBOX_AZURE_ALERTS_KEYS_URL", ""), Role: r.str("FUSEBOX_AZURE_ALERTS_ROLE", ""),
		AppID: r.str("FUSEBOX_AZURE_ALERTS_APPID", "")}
	if e.Tenant == "" && e.Audience == "" {
		return nil
	}
	switch {
	case e.Tenant == "" || e.Audience == "":
		r.fail("FUSEBOX_AZURE_ALERTS_TENANT", "and FUSEBOX_AZURE_ALERTS_AUDIENCE are set together: the tenant's id and the app registration's application id URI (or client id) the action group's secure webhook asks a token for")
		return nil
	case !guidPattern.MatchString(e.Tenant):
		r.fail("FUSEBOX_AZURE_ALERTS_TENANT", "must be the tenant's id, a GUID, got %q", e.Tenant)
		return nil
	case e.Role == "" && e.AppID == "":
		// Any service principal of the tenant can get a token for the
		// audience: the caller must be pinned, by role or application.
		r.fail("FUSEBOX_AZURE_ALERTS_ROLE", "or FUSEBOX_AZURE_ALERTS_APPID must be set with FUSEBOX_AZURE_ALERTS_TENANT, or any service principal of the tenant could post alerts that trip circuits: "+
			"set FUSEBOX_AZURE_ALERTS_APPID=%s (Azure Monitor's action groups' application, AzNS AAD Webhook) and/or FUSEBOX_AZURE_ALERTS_ROLE to the app role you assigned to it (such as ActionGroupsSecureWebhook)", azureActionGroupsAppID)
		return nil
	case e.AppID != "" && !guidPattern.MatchString(e.AppID):
		r.fail("FUSEBOX_AZURE_ALERTS_APPID", "must be the calling application's id, a GUID (Azure Monitor's action groups': %s), got %q", azureActionGroupsAppID, e.AppID)
		return nil
	}
	if e.Issuer == "" {
		e.Issuer = "https://sts.windows.net/" + e.Tenant + "/" // the v1 tokens an action group's app registration is sent
	}
	if e.KeysURL == "" {
		e.KeysURL = "https://login.microsoftonline.com/" + e.Tenant + "/discovery/v2.0/keys"
	}
	if u, err := url.Parse(e.KeysURL); err != nil || (u.Scheme != "https" && r.str("FUSEBOX_ENV", "") != "development") {
		r.fail("FUSEBOX_AZURE_ALERTS_KEYS_URL", "must be the tenant's https JWKS address")
	}
	return e
}

// azureActionGroupsAppID is the application Azure Monitor's action groups
// send secure webhooks as (azalerts.ActionGroupsAppID), named in the
// advice of a configuration that pins no caller.
const azureActionGroupsAppID = "461e8683-5575-4561-ac7f-899cc907d62a"

var guidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// TeamMember maps a claim value, or "user:" and a local user's name, to a
// role on a team's apps (FUSEBOX_TEAM_MEMBERS: team:role:who, ...).
type TeamMember struct {
	Team, Role, Who string
}

func (r *reader) teamMembers() []TeamMember {
	var out []TeamMember
	for i, entry := range r.list("FUSEBOX_TEAM_MEMBERS") {
		parts := strings.SplitN(entry, ":", 3)
		switch {
		case len(parts) != 3 || strings.TrimSpace(parts[2]) == "":
			r.fail("FUSEBOX_TEAM_MEMBERS", "entry %d must be team:role:who, who being a group's object id or name, an app role, or user:NAME", i+1)
		case !teams.ValidName(parts[0]):
			r.fail("FUSEBOX_TEAM_MEMBERS", "entry %d: %q is not a team's name (1 to 40 lower-case letters, digits or -)", i+1, parts[0])
		case parts[1] != RoleViewer && parts[1] != RoleOperator:
			r.fail("FUSEBOX_TEAM_MEMBERS", "entry %d (%s): a role on a team is viewer or operator, got %q", i+1, parts[0], parts[1])
		case len(parts[2]) > teams.MaxWho:
			r.fail("FUSEBOX_TEAM_MEMBERS", "entry %d (%s): who is longer than %d characters", i+1, parts[0], teams.MaxWho)
		default:
			out = append(out, TeamMember{Team: parts[0], Role: parts[1], Who: strings.TrimSpace(parts[2])})
		}
	}
	return out
}

// TeamScope is one scope of a team's apps (FUSEBOX_TEAM_SCOPES:
// team:/subscriptions/<id>[/resourceGroups/<name>], ...).
type TeamScope struct {
	Team  string
	Scope teams.Scope
}

func (r *reader) teamScopes() []TeamScope {
	var out []TeamScope
	for i, entry := range r.list("FUSEBOX_TEAM_SCOPES") {
		team, text, ok := strings.Cut(entry, ":")
		if !ok || !teams.ValidName(team) {
			r.fail("FUSEBOX_TEAM_SCOPES", "entry %d must be team:scope, the team's name (lower-case letters, digits or -) and /subscriptions/<id> or /subscriptions/<id>/resourceGroups/<name>", i+1)
			continue
		}
		sc, err := teams.ParseScope(text)
		if err != nil {
			r.fail("FUSEBOX_TEAM_SCOPES", "entry %d (%s): %s", i+1, team, err)
			continue
		}
		out = append(out, TeamScope{Team: team, Scope: sc})
	}
	return out
}

// grantsProblem says what is wrong with a local user's roles; empty: nothing.
func grantsProblem(spec string) string {
	if _, _, err := teams.ParseGrants(spec); err != nil {
		return err.Error()
	}
	return ""
}

func (r *reader) localUsers() []LocalUser {
	raw := r.str("FUSEBOX_LOCAL_USERS", "")
	if raw == "" {
		return nil
	}
	var users []LocalUser
	seen := map[string]bool{}
	for i, entry := range strings.Split(raw, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, rest, ok1 := strings.Cut(entry, ":")
		role, hash, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			r.fail("FUSEBOX_LOCAL_USERS", "entry %d must be name:role:bcrypt-hash (make one with: fusebox hash-password)", i+1)
			continue
		}
		switch {
		case !userNamePattern.MatchString(name):
			r.fail("FUSEBOX_LOCAL_USERS", "entry %d: user name %q may hold only letters, digits and . _ @ -", i+1, name)
		case grantsProblem(role) != "":
			r.fail("FUSEBOX_LOCAL_USERS", "entry %d (%s): %s", i+1, name, grantsProblem(role))
		case !strings.HasPrefix(hash, "$2a$") && !strings.HasPrefix(hash, "$2b$") && !strings.HasPrefix(hash, "$2y$"):
			r.fail("FUSEBOX_LOCAL_USERS", "entry %d (%s): the password must be a bcrypt hash starting with $2a$, $2b$ or $2y$ (make one with: fusebox hash-password)", i+1, name)
		case seen[strings.ToLower(name)]:
			r.fail("FUSEBOX_LOCAL_USERS", "entry %d: user %q is listed twice", i+1, name)
		default:
			seen[strings.ToLower(name)] = true
			users = append(users, LocalUser{Name: name, Role: role, PasswordHash: Secret(hash)})
		}
	}
	return users
}

// keyEntries reads a list of id:key entries, each key of 32 characters or
// more.
func (r *reader) keyEntries(name string) []KeyEntry {
	var keys []KeyEntry
	for i, entry := range r.list(name) {
		id, key, ok := strings.Cut(entry, ":")
		switch {
		case !ok || id == "" || strings.ContainsAny(id, "."):
			r.fail(name, "entry %d must be id:key, the id without dots", i+1)
		case len(key) < 32:
			r.fail(name, "entry %d (%s): the key must be at least 32 characters; generate one with: openssl rand -base64 48", i+1, id)
		default:
			keys = append(keys, KeyEntry{ID: id, Key: Secret(key)})
		}
	}
	return keys
}

// secretsKeys reads FUSEBOX_SECRETS_KEYS ("id:key,..."), or falls back to
// the session key under the id "s": rotating the session key then needs
// the old one listed as "s:<old key>" after the new first key.
func (r *reader) secretsKeys(sessionKey Secret) []KeyEntry {
	keys := r.keyEntries("FUSEBOX_SECRETS_KEYS")
	if len(keys) == 0 && len(sessionKey) >= 32 {
		keys = []KeyEntry{{ID: "s", Key: sessionKey}}
	}
	return keys
}

// easyAuthPlatform refuses Easy Auth's headers where the platform does not
// say it authenticates every request: anyone could send them otherwise.
// App Service sets WEBSITE_AUTH_ENABLED=True when its authentication is on;
// Container Apps sets no such variable, so there Fusebox signs in with
// OpenID Connect itself.
func (r *reader) easyAuthPlatform() {
	if v, _ := r.lookup("CONTAINER_APP_NAME"); v != "" {
		r.fail("FUSEBOX_EASYAUTH_ENABLED", "Container Apps does not tell a container that its authentication is on, so Fusebox would believe anyone's X-MS-CLIENT-PRINCIPAL header: sign in with FUSEBOX_OIDC_ISSUER and FUSEBOX_OIDC_CLIENT_ID instead")
		return
	}
	if v, _ := r.lookup("WEBSITE_AUTH_ENABLED"); !strings.EqualFold(v, "true") {
		r.fail("FUSEBOX_EASYAUTH_ENABLED", "App Service authentication is off (WEBSITE_AUTH_ENABLED is not True), so anyone could send the X-MS-CLIENT-PRINCIPAL header: turn on authentication with 'Require authentication' for the app first (deploy/azure does), or sign in with FUSEBOX_OIDC_ISSUER")
	}
}

func (r *reader) mail(sessionKey Secret) Mail {
	m := Mail{
		Host: r.str("FUSEBOX_SMTP_HOST", ""), Port: int(r.whole("FUSEBOX_SMTP_PORT", 587, "a port number, such as 587")),
		Username: r.str("FUSEBOX_SMTP_USERNAME", ""), Password: Secret(r.str("FUSEBOX_SMTP_PASSWORD", "")),
		TLS: strings.ToLower(r.str("FUSEBOX_SMTP_TLS", "mandatory")), From: r.str("FUSEBOX_MAIL_FROM", ""),
		LinkTTL: r.duration("FUSEBOX_LINK_TTL", 24*time.Hour), ResumeSignIn: r.bool("FUSEBOX_RESUME_REQUIRES_SIGNIN", false),
		RemindEvery: r.duration("FUSEBOX_REMINDER_INTERVAL", 4*time.Hour), MaxReminders: int(r.whole("FUSEBOX_REMINDER_MAX", 3, "a whole number of reminders, such as 3")),
	}
	switch m.TLS {
	case "mandatory", "opportunistic", "none":
	default:
		r.fail("FUSEBOX_SMTP_TLS", "must be mandatory, opportunistic or none, got %q", m.TLS)
	}
	if m.Host != "" {
		if m.Port < 1 || m.Port > 65535 {
			r.fail("FUSEBOX_SMTP_PORT", "must be a port number, such as 587")
		}
		if _, err := mail.ParseAddress(m.From); err != nil {
			r.fail("FUSEBOX_MAIL_FROM", "must be the sender's address, such as fusebox@example.com, when FUSEBOX_SMTP_HOST is set")
		}
	}
	if m.LinkTTL < time.Minute || m.LinkTTL > 7*24*time.Hour {
		r.fail("FUSEBOX_LINK_TTL", "must be between 1m and 168h, got %s: a mailed link acts without sign-in for that long", m.LinkTTL)
	}
	if m.MaxReminders < 0 || m.MaxReminders > 20 {
		r.fail("FUSEBOX_REMINDER_MAX", "must be between 0 and 20")
	}
	if m.RemindEvery < time.Minute {
		r.fail("FUSEBOX_REMINDER_INTERVAL", "must be at least 1m, got %s", m.RemindEvery)
	}
	m.LinkKeys = r.keyEntries("FUSEBOX_LINK_KEYS")
	if len(m.LinkKeys) == 0 && len(sessionKey) >= 32 {
		// Without keys of their own, links are signed with a key derived
		// from the session key: rotating that key then also ends old links.
		h := hmac.New(sha256.New, []byte(sessionKey))
		h.Write([]byte("fusebox-resume-links"))
		m.LinkKeys = []KeyEntry{{ID: "s", Key: Secret(h.Sum(nil))}}
	}
	return m
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (r *reader) apiTokens() []APIToken {
	var out []APIToken
	for i, entry := range r.list("FUSEBOX_API_TOKENS") {
		parts := strings.Split(entry, ":")
		switch {
		case len(parts) != 3:
			r.fail("FUSEBOX_API_TOKENS", "entry %d must be name:role:sha256 (make one with: fusebox api-token NAME ROLE)", i+1)
		case !userNamePattern.MatchString(parts[0]):
			r.fail("FUSEBOX_API_TOKENS", "entry %d: name %q may hold only letters, digits and . _ @ -", i+1, parts[0])
		case parts[1] != RoleViewer && parts[1] != RoleOperator && parts[1] != RoleAdmin:
			r.fail("FUSEBOX_API_TOKENS", "entry %d (%s): role must be viewer, operator or admin (an operator's token is an admin's: these tokens are for bootstrap), got %q", i+1, parts[0], parts[1])
		case !hexHash.MatchString(parts[2]):
			r.fail("FUSEBOX_API_TOKENS", "entry %d (%s): the third part must be the token's SHA-256 in lower-case hex, not the token", i+1, parts[0])
		default:
			out = append(out, APIToken{Name: parts[0], Role: parts[1], Hash: Secret(parts[2])})
		}
	}
	return out
}

func (r *reader) oidc() *OIDC {
	o := &OIDC{
		Issuer:       r.str("FUSEBOX_OIDC_ISSUER", ""),
		ClientID:     r.str("FUSEBOX_OIDC_CLIENT_ID", ""),
		ClientSecret: Secret(r.str("FUSEBOX_OIDC_CLIENT_SECRET", "")),
		Scopes:       r.list("FUSEBOX_OIDC_SCOPES"),
		DisplayName:  r.str("FUSEBOX_OIDC_DISPLAY_NAME", "single sign-on"),
		RoleMaxAge:   r.duration("FUSEBOX_OIDC_ROLE_MAX_AGE", 5*time.Minute),
	}
	if o.Issuer == "" {
		if o.ClientID != "" || o.ClientSecret != "" {
			r.fail("FUSEBOX_OIDC_ISSUER", "is required when FUSEBOX_OIDC_CLIENT_ID or FUSEBOX_OIDC_CLIENT_SECRET is set")
		}
		return nil
	}
	if u, err := url.Parse(o.Issuer); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		r.fail("FUSEBOX_OIDC_ISSUER", "must be the issuer URL, such as https://login.microsoftonline.com/<tenant-id>/v2.0, got %q", o.Issuer)
	}
	if o.ClientID == "" {
		r.fail("FUSEBOX_OIDC_CLIENT_ID", "is required with FUSEBOX_OIDC_ISSUER: the application (client) id registered with the provider")
	}
	if o.ClientSecret == "" {
		r.fail("FUSEBOX_OIDC_CLIENT_SECRET", "is required with FUSEBOX_OIDC_ISSUER: a client secret of the registered application")
	}
	if len(o.Scopes) == 0 {
		o.Scopes = []string{"openid", "profile", "email"}
	}
	if o.RoleMaxAge < time.Second || o.RoleMaxAge > time.Hour {
		r.fail("FUSEBOX_OIDC_ROLE_MAX_AGE", "must be between 1s and 1h, got %s: a role taken away at the provider holds here that long", o.RoleMaxAge)
	}
	return o
}

// AllowLoopbackChannels reports whether alert channels may post over plain
// http to loopback receivers: on a developer's machine only.
func (c *Config) AllowLoopbackChannels() bool { return c.Env == Development }

// LeaseTiming is what an operator may tune of the leases: a shorter
// Duration means quicker takeover after an instance dies, for more
// renewals per second per lease.
type LeaseTiming struct {
	Duration, RenewDeadline, RetryPeriod time.Duration
}
