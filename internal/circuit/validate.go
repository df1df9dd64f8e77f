package circuit

import (
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/trigger"
	"github.com/fusebox/fusebox/internal/validation"
)

// FieldError and ValidationError are validation's, so circuits, jobs and
// channels answer the same way.
type (
	FieldError      = validation.FieldError
	ValidationError = validation.Error
)

var appIDPattern = regexp.MustCompile(`^(?:[a-z0-9][a-z0-9-]{0,39}\.)?[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$`)

// Limits on what a circuit may say.
const (
	MaxThreshold = 1_000_000
	MaxWindow    = 24 * time.Hour
	MaxCooldown  = 7 * 24 * time.Hour
)

// ValidAppID reports whether id is a usable app id: lower-case letters,
// digits and dashes, 1 to 40 characters, after its team's name and a dot
// when a team's operator named it (access.Scope.Name).
func ValidAppID(id string) bool { return appIDPattern.MatchString(id) }

// Validate checks a circuit's settings against its app. app may be nil
// when the app is unknown, which is itself a problem.
// MaxQuorum bounds a circuit's quorum of instances.
const MaxQuorum = 1000

// MaxHubRetention is the longest Event Hubs keeps an event (Premium and
// Dedicated: 90 days).
const MaxHubRetention = 90 * 24 * time.Hour

func (c Circuit) Validate(app *App) error {
	var v ValidationError
	add := v.Add
	switch {
	case app == nil:
		add("app", "there is no registered function app %q", c.AppID)
	}
	switch {
	case !trigger.ValidName(c.Function):
		add("function", "must be a function name: %s", trigger.NameRule)
	case app != nil:
		if err := trigger.CheckSettable(c.Function, app.Linux); err != nil {
			add("function", "%s", err)
		}
	}
	switch {
	case c.Threshold < 1:
		add("threshold", "must be at least 1 (the circuit trips on more than this many failures)")
	case c.Threshold > MaxThreshold:
		add("threshold", "must be at most %d", MaxThreshold)
	}
	if c.Rule.Ratio != 0 || c.Rule.MinCalls != 0 {
		if !(c.Rule.Ratio > 0 && c.Rule.Ratio <= 1) {
			add("ratio", "must be more than 0 %% and at most 100 %% of calls")
		}
		switch {
		case c.Rule.MinCalls < 1:
			add("min_calls", "must be at least 1: the rule waits for this many calls in the window before it weighs them")
		case c.Rule.MinCalls > MaxThreshold:
			add("min_calls", "must be at most %d", MaxThreshold)
		}
	}
	switch {
	case c.Window <= 0:
		add("window", "must be longer than zero, such as 30s or 5m")
	case c.Window > MaxWindow:
		add("window", "must be at most %s", spoken.Duration(MaxWindow))
	case c.Window%time.Second != 0:
		add("window", "must be whole seconds")
	}
	for _, r := range c.Recipients {
		if a, err := mail.ParseAddress(r); err != nil || a.Address != r {
			add("recipients", "%q is not an e-mail address", r)
			break
		}
	}
	if len(c.EventHub) > 300 || strings.Count(c.EventHub, "/") > 2 || strings.Contains(c.EventHub, "//") {
		add("event_hub", "must be a hub name, hub/consumer group, or namespace/hub/consumer group")
	}
	if c.Rule.MinInstances < 0 || c.Rule.MinInstances > MaxQuorum {
		add("min_instances", "must be from 0 (no quorum) to %d", MaxQuorum)
	}
	switch {
	case c.HubRetention < 0 || c.HubRetention > MaxHubRetention:
		add("event_hub_retention", "must be at most 90 days (2160h), as Event Hubs keeps events no longer")
	case c.HubRetention%time.Hour != 0:
		add("event_hub_retention", "must be whole hours, as Event Hubs sets it")
	case c.HubRetention > 0 && c.EventHub == "":
		add("event_hub_retention", "needs the event hub it consumes")
	}
	if c.Queue != "" && !setaside.ValidQueueName(c.Queue) {
		add("queue", "must be a queue name: 3 to 63 lowercase letters, digits and single hyphens")
	}
	switch {
	case c.Parking != "" && !setaside.ValidQueueName(c.Parking):
		add("parking_queue", "must be a queue name: 3 to 63 lowercase letters, digits and single hyphens")
	case c.Parking != "" && c.Parking == c.Queue:
		add("parking_queue", "must not be the queue that triggers the function: what is parked there would run again at once")
	}
	for _, ch := range c.Channels {
		if !ValidAppID(ch) {
			add("channels", "%q is not a channel id", ch)
			break
		}
	}
	c.Settings.checkEach(add)
	c.Escalate.validate(add)
	c.validateThrottle(add)
	if c.Policy.AutoResume {
		switch {
		case c.Policy.Cooldown < time.Second:
			add("cooldown", "must be at least 1s when automatic resume is on")
		case c.Policy.Cooldown > MaxCooldown:
			add("cooldown", "must be at most %s", spoken.Duration(MaxCooldown))
		}
		switch {
		case c.Policy.MaxCooldown != 0 && c.Policy.MaxCooldown < c.Policy.Cooldown:
			add("max_cooldown", "must be at least the cooldown (%s): the cooldown doubles with each trip in a row up to this cap", spoken.Duration(c.Policy.Cooldown))
		case c.Policy.MaxCooldown > MaxCooldown:
			add("max_cooldown", "must be at most %s", spoken.Duration(MaxCooldown))
		}
	}
	if len(v) > 0 {
		return v
	}
	return nil
}

// hostIDPattern is what the Functions host accepts as a host id.
var hostIDPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// Validate checks an app registration.
func (a App) Validate() error {
	var v ValidationError
	add := v.Add
	if !ValidAppID(a.ID) {
		add("id", "must be 1 to 40 lower-case letters, digits or dashes, such as orders-prod")
	}
	if a.Guardrail.MaxOff < 0 {
		add("guardrail_max", "must be 0 (no limit) or more circuits")
	}
	if a.Guardrail.MaxShare < 0 || a.Guardrail.MaxShare > 1 {
		add("guardrail_share", "must be between 0 %% (no limit) and 100 %% of the app's circuits")
	}
	a.Escalate.validate(add)
	if a.SetAsideLimit < 0 || a.SetAsideLimit > 1_000_000 {
		add("set_aside_limit", "must be a number of messages from 1 to 1000000, or empty for the default of %d", setaside.DefaultGrowthLimit)
	}
	if !ValidResumeFrom(a.ResumeFrom) {
		add("resume_from", "must be %s, %s or empty (from before the first failure)", ResumeFromFirstFailure, ResumeFromCheckpoint)
	}
	if a.HostID != "" && !hostIDPattern.MatchString(a.HostID) {
		// It names folders of the app's storage: a slash would read
		// another host's blobs.
		add("host_id", "must be the app's host id: 1 to 32 lower-case letters, digits or dashes, not starting or ending with a dash")
	}
	if a.InsightsAppID != "" && !ValidGUID(a.InsightsAppID) {
		// It is written into links people follow: nothing else.
		add("insights_app_id", "must be the Application Insights resource's Application ID (a GUID such as 0f3d9a2c-5b1e-4c7a-9d2e-3f4a5b6c7d8e, on its API Access page), or empty")
	}
	switch a.Switch {
	case SwitchARM:
		if a.SubscriptionID == "" || a.ResourceGroup == "" || a.Site == "" {
			add("site", "the ARM switch needs the subscription id, resource group and site name")
		}
	case SwitchContainerApp:
		if a.SubscriptionID == "" || a.ResourceGroup == "" || a.Site == "" {
			add("site", "the Container Apps switch needs the subscription id, resource group and the container app's name")
		}
		if a.Slot != "" {
			add("slot", "container apps have revisions, not slots: leave it empty")
		}
	case SwitchLocal:
		if a.LocalSettings == "" {
			add("local_settings", "the local switch needs the path of the app's local.settings.json")
		}
	default:
		add("switch", "must be arm, containerapp or local")
	}
	if len(v) > 0 {
		return v
	}
	return nil
}
