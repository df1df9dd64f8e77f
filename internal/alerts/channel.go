package alerts

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Kinds of channel.
const (
	ChannelMail    = "mail"
	ChannelTeams   = "teams"
	ChannelSlack   = "slack"
	ChannelWebhook = "webhook"
	// ChannelPagerDuty sends Events API v2 events with the service's
	// integration (routing) key; ChannelOpsgenie makes and closes alerts
	// with an API integration's key. Either opens one incident per
	// episode, updates it while the episode lasts and resolves it when the
	// circuit closes or the job recovers.
	ChannelPagerDuty = "pagerduty"
	ChannelOpsgenie  = "opsgenie"
)

// ChannelKinds lists the kinds in the order the dashboard offers them.
var ChannelKinds = []string{ChannelMail, ChannelTeams, ChannelSlack, ChannelWebhook, ChannelPagerDuty, ChannelOpsgenie}

// The on-call services' endpoints, in the US and the EU service regions:
// a PagerDuty or Opsgenie channel posts to one of these and nowhere else
// (or to loopback, in development).
var onCallEndpoints = map[string][]string{
	ChannelPagerDuty: {"https://events.pagerduty.com/v2/enqueue", "https://events.eu.pagerduty.com/v2/enqueue"},
	// Jira Service Management's operations integration API takes the same
	// alert requests, under its own base, with the same GenieKey: Opsgenie's
	// REST API ends on 2027-04-05 and migrated integrations move there.
	ChannelOpsgenie: {"https://api.opsgenie.com", "https://api.eu.opsgenie.com", JSMOpsEndpoint},
}

// JSMOpsEndpoint is Jira Service Management's operations integration API
// (Opsgenie's successor): /v2/alerts and /v2/alerts/{alias}/close below it.
const JSMOpsEndpoint = "https://api.atlassian.com/jsm/ops/integration"

// OnCall says whether a kind of channel is an on-call service, which
// keeps incidents rather than showing messages.
func OnCall(kind string) bool { _, ok := onCallEndpoints[kind]; return ok }

// DefaultEndpoint is where an on-call channel posts when its URL is left
// empty: the service's US region.
func DefaultEndpoint(kind string) string {
	if eps := onCallEndpoints[kind]; len(eps) > 0 {
		return eps[0]
	}
	return ""
}

var (
	pagerDutyKey = regexp.MustCompile(`^[A-Za-z0-9]{32}$`)
	opsgenieKey  = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// Channel is a place alerts go: a list of mail addresses, a Microsoft
// Teams Workflows webhook, a Slack incoming webhook, or a signed generic
// webhook. URL and the signing secrets are secrets: shown once, when they
// are set, and never again.
type Channel struct {
	ID        string // slug, unique
	Name      string
	Kind      string
	Addresses []string // mail
	URL       string   // teams, slack, webhook; pagerduty and opsgenie: the service's endpoint
	// Secret signs webhook deliveries (Standard Webhooks, "whsec_…"); for
	// pagerduty it is the integration (routing) key, for opsgenie the API
	// integration's key.
	// After a rotation the previous one still signs until OldUntil, so
	// receivers can switch over without refusing deliveries.
	Secret    string
	OldSecret string
	OldUntil  time.Time
	CreatedAt time.Time
	Version   string
	// Team owns the channel; empty: shared between teams, which admins
	// manage and every team may name.
	Team string
}

// WithDefaults fills what an operator may leave out: an on-call
// channel's endpoint.
func (ch Channel) WithDefaults() Channel {
	if ch.URL == "" && OnCall(ch.Kind) {
		ch.URL = DefaultEndpoint(ch.Kind)
	}
	return ch
}

// Destination is the outbox's name for where one message goes.
func (ch Channel) Destination() string { return ChannelPrefix + ch.ID }

// ChannelPrefix marks a message's destination as a channel; other
// destinations are mail addresses named directly by a circuit or job.
const ChannelPrefix = "channel:"

// ChannelOf returns the channel id a destination names, if it names one.
func ChannelOf(dest string) (string, bool) {
	return strings.CutPrefix(dest, ChannelPrefix)
}

// Secrets are the webhook secrets that sign a delivery at now.
func (ch Channel) Secrets(now time.Time) []string {
	out := []string{ch.Secret}
	if ch.OldSecret != "" && now.Before(ch.OldUntil) {
		out = append(out, ch.OldSecret)
	}
	return out
}

// MaskedURL shows where a channel posts without the parts that grant
// access: scheme and host only.
func (ch Channel) MaskedURL() string {
	if ch.URL == "" {
		return ""
	}
	u, err := url.Parse(ch.URL)
	if err != nil || u.Host == "" {
		return "(unreadable URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// NewWebhookSecret makes a signing secret in the Standard Webhooks form:
// "whsec_" and 32 random bytes in base64.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// SecretKey decodes a "whsec_…" secret to its key bytes.
func SecretKey(secret string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(k) < 24 || len(k) > 64 {
		return nil, errors.New("a signing secret is whsec_ followed by 24 to 64 bytes in base64")
	}
	return k, nil
}

// Validate checks a channel. allowLoopback admits http:// URLs on
// loopback hosts, for development and tests; anything else must be https.
func (ch Channel) Validate(allowLoopback bool) error {
	var v circuit.ValidationError
	add := v.Add
	if !circuit.ValidAppID(ch.ID) { // channel ids follow the same slug rule as app ids
		add("id", "must be 1 to 40 lower-case letters, digits or dashes, such as oncall-teams")
	}
	if strings.TrimSpace(ch.Name) == "" || len(ch.Name) > 100 {
		add("name", "must be 1 to 100 characters")
	}
	switch ch.Kind {
	case ChannelMail:
		if len(ch.Addresses) == 0 {
			add("addresses", "name at least one address")
		}
		if len(ch.Addresses) > 50 {
			add("addresses", "at most 50 addresses")
		}
		for _, a := range ch.Addresses {
			if p, err := mail.ParseAddress(a); err != nil || p.Address != a {
				add("addresses", "%q is not an e-mail address", a)
				break
			}
		}
	case ChannelTeams, ChannelSlack, ChannelWebhook:
		if msg := checkURL(ch.URL, allowLoopback); msg != "" {
			add("url", "%s", msg)
		}
		if ch.Kind == ChannelWebhook {
			if _, err := SecretKey(ch.Secret); err != nil {
				add("secret", "%s", err.Error())
			}
		}
	case ChannelPagerDuty, ChannelOpsgenie:
		switch {
		case slices.Contains(onCallEndpoints[ch.Kind], ch.URL):
		case allowLoopback && checkURL(ch.URL, true) == "" && strings.HasPrefix(ch.URL, "http://"):
		default:
			add("url", "must be empty or one of %s", strings.Join(onCallEndpoints[ch.Kind], ", "))
		}
		if ch.Kind == ChannelPagerDuty && !pagerDutyKey.MatchString(ch.Secret) {
			add("key", "must be the service's integration key: 32 letters and digits (the service's Integrations tab, Events API v2)")
		}
		if ch.Kind == ChannelOpsgenie && !opsgenieKey.MatchString(ch.Secret) {
			add("key", "must be the API integration's key, such as 12345678-abcd-4ef0-9876-0123456789ab")
		}
	default:
		add("kind", "must be one of %s", strings.Join(ChannelKinds, ", "))
	}
	if len(v) > 0 {
		return v
	}
	return nil
}

func checkURL(raw string, allowLoopback bool) string {
	if len(raw) > 2048 {
		return "is longer than 2,048 characters"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return "must be an absolute https:// URL without a user name"
	}
	switch {
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && allowLoopback && isLoopback(u.Hostname()):
		return ""
	case u.Scheme == "http":
		return "must use https: a webhook URL is a secret and must not travel in the clear (http is allowed only to loopback in development)"
	}
	return "must be an https:// URL"
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SecretOverlap is how long a rotated-out webhook secret keeps signing.
const SecretOverlap = 24 * time.Hour

// Rotated is the channel with a new signing secret; the current one keeps
// signing beside it for SecretOverlap.
func (ch Channel) Rotated(now time.Time) Channel {
	ch.OldSecret, ch.OldUntil, ch.Secret = ch.Secret, now.Add(SecretOverlap), NewWebhookSecret()
	return ch
}

// ErrNoChannel is a channel that does not exist; ErrChannelExists an id
// taken already.
var (
	ErrNoChannel     = fmt.Errorf("alerts: no such channel (%w)", circuit.ErrNotFound)
	ErrChannelExists = errors.New("alerts: a channel with this id exists already")
)
