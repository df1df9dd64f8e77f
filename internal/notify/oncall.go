package notify

// The on-call services: PagerDuty's Events API v2 and Opsgenie's Alert
// API. Each keeps one incident per alerts.Notice.Incident: events that
// trigger it while it is open are de-duplicated into it by the service,
// and a resolving notice closes it.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
)

// PagerDutyEvent is an Events API v2 event (developer.pagerduty.com,
// "Send an Alert Event"): a trigger with the payload's required summary,
// source and severity, or a resolve naming the same dedup_key.
type PagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *PagerDutyPayload `json:"payload,omitempty"`
	Client      string            `json:"client,omitempty"`
	ClientURL   string            `json:"client_url,omitempty"`
	Links       []PagerDutyLink   `json:"links,omitempty"`
}

// PagerDutyPayload is a trigger's description of the problem.
type PagerDutyPayload struct {
	Summary       string            `json:"summary"`
	Source        string            `json:"source"`
	Severity      string            `json:"severity"`
	Timestamp     string            `json:"timestamp,omitempty"`
	Component     string            `json:"component,omitempty"`
	Group         string            `json:"group,omitempty"`
	Class         string            `json:"class,omitempty"`
	CustomDetails map[string]string `json:"custom_details,omitempty"`
}

// PagerDutyLink is a link shown on the incident.
type PagerDutyLink struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// PagerDuty's documented limits: summary 1,024 characters, dedup_key 255.
const (
	pagerDutySummaryMax = 1024
	pagerDutyDedupMax   = 255
)

// NewPagerDutyEvent turns a notice into the event for routingKey.
func NewPagerDutyEvent(n alerts.Notice, routingKey string) PagerDutyEvent {
	ev := PagerDutyEvent{RoutingKey: routingKey, EventAction: alerts.IncidentAction(n), DedupKey: incidentKey(n, pagerDutyDedupMax)}
	if ev.EventAction == alerts.IncidentResolve {
		return ev
	}
	app, _ := n.Data["app"].(string)
	function, _ := n.Data["function"].(string)
	source := app
	if source == "" {
		source = "fusebox"
	}
	ev.Payload = &PagerDutyPayload{Summary: clip(n.Title, pagerDutySummaryMax), Source: source, Severity: severity(n.Type),
		Timestamp: n.At.UTC().Format(time.RFC3339), Component: function, Group: app, Class: n.Type, CustomDetails: details(n)}
	ev.Client, ev.ClientURL = "Fusebox", n.LinkURL
	if n.LinkURL != "" {
		ev.Links = []PagerDutyLink{{Href: n.LinkURL, Text: n.LinkText}}
	}
	return ev
}

// severity is PagerDuty's severity of a notice type (critical, error,
// warning or info); Opsgenie's priority follows it.
func severity(typ string) string {
	switch typ {
	case "circuit.opened", "circuit.reminder", "circuit.escalated", "circuit.expiring", "circuit.expiring_escalated", "circuit.events_lost":
		return "critical"
	case "circuit.held", "circuit.flapping", "job.missing", "job.failing":
		return "error"
	case "test":
		return "info"
	}
	return "warning"
}

// OpsgenieAlert is the body of Opsgenie's "Create Alert" request.
type OpsgenieAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description,omitempty"`
	Entity      string            `json:"entity,omitempty"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
	Tags        []string          `json:"tags,omitempty"`
	Details     map[string]string `json:"details,omitempty"`
}

// OpsgenieClose is the body of "Close Alert".
type OpsgenieClose struct {
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
}

// Opsgenie's documented limits: message 130 characters, alias 512,
// description 15,000.
const (
	opsgenieMessageMax     = 130
	opsgenieAliasMax       = 512
	opsgenieDescriptionMax = 15000
)

// OpsgenieRequest is the request a notice makes: where (relative to the
// API's base URL) and its body.
func OpsgenieRequest(n alerts.Notice) (path string, body any) {
	// An alias travels in a path to be closed: Fusebox's names hold no
	// ':' (ids, function and queue names), so it replaces the '/'.
	alias := strings.ReplaceAll(incidentKey(n, opsgenieAliasMax), "/", ":")
	if alerts.IncidentAction(n) == alerts.IncidentResolve {
		return "/v2/alerts/" + url.PathEscape(alias) + "/close?identifierType=alias", OpsgenieClose{Source: "Fusebox", Note: clip(n.Title+": "+n.Text, 25000)}
	}
	priority := map[string]string{"critical": "P1", "error": "P2", "warning": "P3", "info": "P5"}[severity(n.Type)]
	entity, _ := n.Data["app"].(string)
	if f, ok := n.Data["function"].(string); ok && f != "" {
		entity += "/" + f
	}
	return "/v2/alerts", OpsgenieAlert{Message: clip(n.Title, opsgenieMessageMax), Alias: alias, Description: clip(n.Text+"\n\n"+n.LinkURL, opsgenieDescriptionMax),
		Entity: entity, Source: "Fusebox", Priority: priority, Tags: []string{"fusebox", n.Type}, Details: details(n)}
}

// details are a notice's facts and link, each value cut to 1,000
// characters: what the incident shows beside its title.
func details(n alerts.Notice) map[string]string {
	out := make(map[string]string, len(n.Facts)+1)
	for _, f := range n.Facts {
		out[f.Name] = clip(f.Value, 1000)
	}
	if n.LinkURL != "" {
		out["Fusebox"] = n.LinkURL
	}
	return out
}

// incidentKey is the notice's incident name, or its digest when the name
// is longer than the service keeps.
func incidentKey(n alerts.Notice, max int) string {
	if len(n.Incident) <= max {
		return n.Incident
	}
	sum := sha256.Sum256([]byte(n.Incident))
	return "fusebox/" + hex.EncodeToString(sum[:])
}

// onCallRequest is the URL, headers and body a notice makes for an
// on-call channel.
func onCallRequest(ch alerts.Channel, n alerts.Notice) (string, http.Header, any, error) {
	if n.Incident == "" {
		return "", nil, nil, fmt.Errorf("a %s notice names no incident", n.Type)
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	switch ch.Kind {
	case alerts.ChannelPagerDuty:
		return ch.URL, hdr, NewPagerDutyEvent(n, ch.Secret), nil
	case alerts.ChannelOpsgenie:
		path, body := OpsgenieRequest(n)
		hdr.Set("Authorization", "GenieKey "+ch.Secret)
		return strings.TrimRight(ch.URL, "/") + path, hdr, body, nil
	}
	return "", nil, nil, fmt.Errorf("kind %q is not an on-call service", ch.Kind)
}
