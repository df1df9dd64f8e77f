// Package manifest is Fusebox's configuration as a file: the apps,
// circuits, jobs, alert channels and maintenance windows that `fusebox
// export` writes and `fusebox apply` makes a Fusebox match, through its
// HTTP API.
//
// A file holds no secret. An app's host storage and Event Hubs connection
// and a chat or webhook channel's URL are named by the environment
// variable apply reads them from (host_storage_env, event_hubs_env,
// url_env); a secret is sent when its variable is set, and kept as it is
// in Fusebox when it is not.
//
// A file is checked whole before anything is changed: every problem is
// named with its line, and a file with any problem changes nothing.
package manifest

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Version is the file format's version.
const Version = 1

// Doc is one file.
type Doc struct {
	Version     int       `yaml:"version"`
	Channels    []Channel `yaml:"channels,omitempty"`
	Apps        []App     `yaml:"apps,omitempty"`
	Circuits    []Circuit `yaml:"circuits,omitempty"`
	Jobs        []Job     `yaml:"jobs,omitempty"`
	Maintenance []Window  `yaml:"maintenance,omitempty"`
	// Teams are where in Azure each team's apps may live: an admin's.
	Teams []Team `yaml:"teams,omitempty"`
	// What Fusebox holds (Client.Current) also says who asks and the
	// channels shared between teams, which a team's file names but never
	// holds.
	Caller Caller   `yaml:"-"`
	Shared []string `yaml:"-"`
}

// Caller is who a token is, as GET /api/v1/me says: its role on every app
// and on each team's.
type Caller struct {
	Role  string
	Teams map[string]string
}

// Admin says the caller manages Fusebox itself, every team included.
func (c Caller) Admin() bool { return c.Role == "admin" }

// Operates says the caller may place things in team ("": apart from
// every team, an admin's).
func (c Caller) Operates(team string) bool {
	return c.Admin() || (team != "" && (c.Role == "operator" || c.Teams[team] == "operator"))
}

// OnlyTeam is the team a caller of one team's puts what names none in.
func (c Caller) OnlyTeam() string {
	if c.Admin() || len(c.Teams) != 1 {
		return ""
	}
	for t := range c.Teams {
		return t
	}
	return ""
}

// Channel is an alert channel, by its id.
type Channel struct {
	ID        string   `yaml:"id"`
	Name      string   `yaml:"name"`
	Kind      string   `yaml:"kind"`
	Addresses []string `yaml:"addresses,omitempty"`
	// URLEnv names the variable holding a chat or webhook channel's URL.
	URLEnv string `yaml:"url_env,omitempty" plan:"-"`
	// KeyEnv names the variable holding a PagerDuty or Opsgenie channel's
	// integration key (their url_env is optional: unset, the US region).
	KeyEnv string `yaml:"key_env,omitempty" plan:"-"`
	// Team owns it; empty: shared between teams (an admin's).
	Team string `yaml:"team,omitempty"`
	Line int    `yaml:"-" plan:"-"`
}

// Team is a team's Azure scopes, by its name: subscriptions, resource
// groups and Container Apps environments, as ARM writes their ids. Apply
// sets them alone, so the team's members and channels stay as they are;
// an admin's file alone holds teams. Scopes set in FUSEBOX_TEAM_SCOPES
// are the environment's, in no file.
type Team struct {
	Name   string   `yaml:"name"`
	Scopes []string `yaml:"scopes"`
	Line   int      `yaml:"-" plan:"-"`
}

// App is a registered function app, by its id. Where its switch writes
// (switch, subscription, resource group, site, slot, local settings) is
// set when it is registered and never changed by apply.
type App struct {
	ID             string   `yaml:"id"`
	Team           string   `yaml:"team,omitempty"` // the team that owns it; empty: admins' alone
	DisplayName    string   `yaml:"display_name,omitempty"`
	Switch         string   `yaml:"switch"`
	Subscription   string   `yaml:"subscription,omitempty"`
	ResourceGroup  string   `yaml:"resource_group,omitempty"`
	Site           string   `yaml:"site,omitempty"`
	Slot           string   `yaml:"slot,omitempty"`
	LocalSettings  string   `yaml:"local_settings,omitempty"`
	Linux          bool     `yaml:"linux,omitempty"`
	GuardrailMax   int      `yaml:"guardrail_max,omitempty"`
	GuardrailShare float64  `yaml:"guardrail_share_percent,omitempty"`
	HostID         string   `yaml:"host_id,omitempty"`
	InsightsAppID  string   `yaml:"insights_app_id,omitempty"`
	SetAsideLimit  int      `yaml:"set_aside_limit,omitempty"`
	ResumeFrom     string   `yaml:"resume_from,omitempty"`
	Channels       []string `yaml:"channels,omitempty"`
	EscalateTo     []string `yaml:"escalate_to,omitempty"`
	EscalateAfter  Duration `yaml:"escalate_after,omitempty"`
	HostStorageEnv string   `yaml:"host_storage_env,omitempty" plan:"-"`
	EventHubsEnv   string   `yaml:"event_hubs_env,omitempty" plan:"-"`
	Line           int      `yaml:"-" plan:"-"`
}

// Circuit is a circuit, by its app and function, and its settings as
// the API spells them (circuit.Spec's yaml names).
type Circuit struct {
	App          string `yaml:"app"`
	Function     string `yaml:"function"`
	circuit.Spec `yaml:",inline"`
	Line         int `yaml:"-" plan:"-"`
}

// Job is a scheduled job, by its slug, else its name. Fusebox's own
// loops' jobs are not in a file.
type Job struct {
	Name         string   `yaml:"name"`
	Team         string   `yaml:"team,omitempty"` // a job of no app: its team
	Slug         string   `yaml:"slug,omitempty"`
	App          string   `yaml:"app,omitempty"`
	Function     string   `yaml:"function,omitempty"`
	Schedule     string   `yaml:"schedule"`
	TimeZone     string   `yaml:"time_zone,omitempty"`
	Grace        Duration `yaml:"grace,omitempty"`
	MaxDuration  Duration `yaml:"max_duration,omitempty"`
	MinDuration  Duration `yaml:"min_duration,omitempty"`
	FailAfter    int      `yaml:"fail_after,omitempty"`
	RecoverAfter int      `yaml:"recover_after,omitempty"`
	Recipients   []string `yaml:"recipients,omitempty"`
	Channels     []string `yaml:"channels,omitempty"`
	Tags         []string `yaml:"tags,omitempty"`
	Misfire      string   `yaml:"misfire,omitempty"`
	Paused       bool     `yaml:"paused,omitempty"`
	ID           string   `yaml:"-" plan:"-"` // Fusebox's, to change it
	Line         int      `yaml:"-" plan:"-"`
}

// Key names a job in a file and in Fusebox: its slug, else its name.
func (j Job) Key() string {
	if j.Slug != "" {
		return "slug " + j.Slug
	}
	return "name " + j.Name
}

// Window is a maintenance window that has not ended. A window has no
// name: it is the same window when every field is the same.
type Window struct {
	App      string    `yaml:"app,omitempty"`
	From     time.Time `yaml:"from"`
	Until    time.Time `yaml:"until"`
	Reason   string    `yaml:"reason"`
	Recurs   string    `yaml:"recurs,omitempty"`
	TimeZone string    `yaml:"time_zone,omitempty"`
	Duration Duration  `yaml:"duration,omitempty"`
	ID       string    `yaml:"-" plan:"-"` // Fusebox's, to end it
	Line     int       `yaml:"-" plan:"-"`
}

// Key is the window's every field.
func (w Window) Key() string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s", w.App, w.From.UTC().Format(time.RFC3339), w.Until.UTC().Format(time.RFC3339), w.Reason, w.Recurs, w.TimeZone, w.Duration)
}

// Duration is a time.Duration written as people write it: 30s, 5m, 1h30m.
type Duration time.Duration

func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	s := time.Duration(d).String()
	// time.Duration says 5m0s and 1h0m0s; people say 5m and 1h.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalYAML writes the duration as text.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads 30s, 5m, 1h30m. Its error is a TypeError, so that
// the file's other problems are found too.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, err)}}
	}
	return nil
}

// UnmarshalText reads 30s, 5m, 1h30m.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 30s, 5m or 1h30m", string(b))
	}
	*d = Duration(v)
	return nil
}

// FillTeams puts what names no team in the caller's only team, as
// Fusebox would: a team's file need not say its team on every line.
func (d *Doc) FillTeams(c Caller) {
	team := c.OnlyTeam()
	if team == "" {
		return
	}
	for i := range d.Apps {
		if d.Apps[i].Team == "" {
			d.Apps[i].Team = team
		}
	}
	for i := range d.Jobs {
		if d.Jobs[i].Team == "" && d.Jobs[i].App == "" {
			d.Jobs[i].Team = team
		}
	}
	for i := range d.Channels {
		if d.Channels[i].Team == "" {
			d.Channels[i].Team = team
		}
	}
}
