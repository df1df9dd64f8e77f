package manifest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/internal/validation"
)

// Env reads an environment variable.
type Env func(string) (string, bool)

// Check finds every problem of doc against what Fusebox holds now
// (current): each entry by the domain's own rules, names given twice,
// references to apps and channels that neither the file nor Fusebox has
// (with prune, that the file does not keep), and secrets a new entry needs
// but whose variable is not set. It changes nothing.
func Check(doc, current Doc, prune bool, env Env) Problems {
	var ps Problems
	channels := map[string]bool{}
	for _, ch := range doc.Channels {
		channels[ch.ID] = true
	}
	if !prune {
		for _, ch := range current.Channels {
			channels[ch.ID] = true
		}
	}
	for _, id := range current.Shared {
		channels[id] = true
	}
	// A file is one team's part, or (an admin's) every team's: an entry of
	// a team the token does not operate refuses the whole file.
	caller := current.Caller
	owned := func(line int, what, team string) {
		if team == "" {
			team = caller.OnlyTeam()
		}
		if caller.Role == "" && caller.Teams == nil {
			return // a Fusebox that does not say who asks: before teams
		}
		if !caller.Operates(team) {
			if team == "" {
				ps.add(line, "team: %s names no team, and only an admin keeps things apart from every team: name one of yours", what)
			} else {
				ps.add(line, "team: %s is team %s's, which this token does not operate: the file is refused whole", what, team)
			}
		}
	}
	apps := map[string]App{}
	for _, a := range current.Apps {
		apps[a.ID] = a
	}
	for _, a := range doc.Apps {
		apps[a.ID] = a
	}
	refer := func(line int, ids []string) {
		for _, id := range ids {
			if !channels[id] {
				ps.add(line, "channels: there is no channel %q in the file%s", id, map[bool]string{false: " or in Fusebox", true: " (with --prune, Fusebox's others go)"}[prune])
			}
		}
	}
	secret := func(line int, field, name string, needed bool) {
		if name == "" {
			if needed {
				ps.add(line, "%s: a new entry needs its secret: name the variable that holds it", field)
			}
			return
		}
		if v, ok := env(name); needed && (!ok || v == "") {
			ps.add(line, "%s: the variable %s is not set, and a new entry needs its secret", field, name)
		}
	}

	seen := map[string]int{}
	twice := func(kind, key string, line int) bool {
		k := kind + " " + key
		if first, ok := seen[k]; ok {
			ps.add(line, "the %s %s is given twice (first at line %d)", kind, key, first)
			return true
		}
		seen[k] = line
		return false
	}

	have := func(kind string, key string) bool {
		switch kind {
		case "channel":
			return slices.ContainsFunc(current.Channels, func(c Channel) bool { return c.ID == key })
		case "app":
			return slices.ContainsFunc(current.Apps, func(a App) bool { return a.ID == key })
		}
		return false
	}

	// A team's names are its own (access.Scope.Name): Fusebox would give
	// a new one a team's operator names "x" the name "team.x", which the
	// next apply would not find; the file says it so.
	named := func(line int, kind, id, team string) {
		if team == "" {
			team = caller.OnlyTeam()
		}
		if problem := access.NameProblem(team, id); problem != "" {
			ps.add(line, "id: the %s %s: %s", kind, id, problem)
			return
		}
		asked := caller.Role != "" || caller.Teams != nil
		if asked && !caller.Admin() && team != "" && !have(kind, id) && !strings.HasPrefix(id, team+".") {
			ps.add(line, "id: the %s %s is new, and what a team's operator names is named in the team's own names: write %s.%s", kind, id, team, id)
		}
	}
	for _, ch := range doc.Channels {
		twice("channel", ch.ID, ch.Line)
		named(ch.Line, "channel", ch.ID, ch.Team)
		if ch.Team == "" && !caller.Admin() && (caller.Role != "" || caller.Teams != nil) {
			ps.add(ch.Line, "team: the channel %s names no team: a channel shared between teams is an admin's; name one of yours", ch.ID)
		} else if ch.Team != "" {
			owned(ch.Line, "the channel "+ch.ID, ch.Team)
		}
		c := alerts.Channel{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Addresses: ch.Addresses}
		isNew := !have("channel", ch.ID)
		switch {
		case alerts.OnCall(ch.Kind):
			if v, ok := env(ch.URLEnv); ok && v != "" {
				c.URL = v
			}
			c = c.WithDefaults()
			c.Secret = onCallPlaceholder[ch.Kind] // the key is the variable's, checked when it is set
			if v, ok := env(ch.KeyEnv); ok && v != "" {
				c.Secret = v
			}
			secret(ch.Line, "key_env", ch.KeyEnv, isNew)
		case ch.Kind != alerts.ChannelMail:
			c.URL = "https://unread.example/" // the URL is the variable's, checked when it is set
			if v, ok := env(ch.URLEnv); ok && v != "" {
				c.URL = v
			}
			secret(ch.Line, "url_env", ch.URLEnv, isNew)
		}
		if ch.Kind == alerts.ChannelWebhook {
			c.Secret = webhookPlaceholder
		}
		fields(&ps, ch.Line, c.Validate(true), nil)
	}
	for _, a := range doc.Apps {
		twice("app", a.ID, a.Line)
		named(a.Line, "app", a.ID, a.Team)
		owned(a.Line, "the app "+a.ID, a.Team)
		fields(&ps, a.Line, a.domain().Validate(), map[string]string{"guardrail_share": "guardrail_share_percent"})
		refer(a.Line, a.Channels)
		_, appEscalation := a.domain().Escalate.Split()
		refer(a.Line, appEscalation)
		secret(a.Line, "host_storage_env", a.HostStorageEnv, false)
		secret(a.Line, "event_hubs_env", a.EventHubsEnv, false)
		if cur, ok := appByID(current.Apps, a.ID); ok {
			for _, f := range moved(cur, a) {
				ps.add(a.Line, "%s: the app %s is registered with %s %q; apply does not move an app: register the new place as another app", f.field, a.ID, f.field, f.have)
			}
		}
	}
	for _, c := range doc.Circuits {
		twice("circuit", c.App+"/"+c.Function, c.Line)
		var app *circuit.App
		if a, ok := apps[c.App]; ok {
			d := a.domain()
			app = &d
		}
		fields(&ps, c.Line, c.domain().Validate(app), map[string]string{"ratio": "failure_ratio"})
		refer(c.Line, c.Channels)
		_, escalation := c.domain().Escalate.Split()
		refer(c.Line, escalation)
	}
	for _, j := range doc.Jobs {
		twice("job", j.Key(), j.Line)
		if j.App == "" {
			owned(j.Line, "the job "+j.Name, j.Team)
		}
		fields(&ps, j.Line, j.domain().Validate(), nil)
		if j.App != "" {
			if _, ok := apps[j.App]; !ok {
				ps.add(j.Line, "app: there is no app %q in the file or in Fusebox", j.App)
			}
		}
		refer(j.Line, j.Channels)
	}
	for _, w := range doc.Maintenance {
		twice("maintenance window", w.Key(), w.Line)
		for f, msg := range w.domain().Validate() {
			ps.add(w.Line, "%s: %s", f, msg)
		}
		if w.App != "" {
			if _, ok := apps[w.App]; !ok {
				ps.add(w.Line, "app: there is no app %q in the file or in Fusebox", w.App)
			}
		}
	}
	for _, t := range doc.Teams {
		twice("team", t.Name, t.Line)
		if asked := caller.Role != "" || caller.Teams != nil; asked && !caller.Admin() {
			ps.add(t.Line, "teams: the team %s: only an admin gives teams their Azure scopes; the file is refused whole", t.Name)
			continue
		}
		if !teams.ValidName(t.Name) {
			ps.add(t.Line, "name: %q is not a team's name (lower-case letters, digits and -, at most 40)", t.Name)
		}
		if _, err := teams.ParseScopes(strings.Join(t.Scopes, "\n")); err != nil {
			ps.add(t.Line, "scopes: the team %s: %s", t.Name, err)
		}
	}
	return ps.sorted()
}

// webhookPlaceholder stands for a webhook's signing secret, which Fusebox
// makes itself.
// onCallPlaceholder stands for a key a file does not hold, in its form.
var onCallPlaceholder = map[string]string{
	alerts.ChannelPagerDuty: "R0000000000000000000000000000000",
	alerts.ChannelOpsgenie:  "00000000-0000-0000-0000-000000000000",
}

var webhookPlaceholder = "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 24))

// fields adds a domain validation error's problems at line, with the
// file's names for the domain's fields.
func fields(ps *Problems, line int, err error, names map[string]string) {
	var v validation.Error
	if !errors.As(err, &v) {
		if err != nil {
			ps.add(line, "%s", err)
		}
		return
	}
	for _, f := range v {
		name := f.Field
		if n, ok := names[name]; ok {
			name = n
		}
		ps.add(line, "%s: %s", name, f.Message)
	}
}

func appByID(apps []App, id string) (App, bool) {
	i := slices.IndexFunc(apps, func(a App) bool { return a.ID == id })
	if i < 0 {
		return App{}, false
	}
	return apps[i], true
}

type placeField struct{ field, have string }

// moved lists where a's place differs from cur's.
func moved(cur, a App) []placeField {
	var out []placeField
	for _, f := range []struct{ field, have, given string }{
		{"switch", cur.Switch, a.Switch}, {"subscription", cur.Subscription, a.Subscription}, {"resource_group", cur.ResourceGroup, a.ResourceGroup},
		{"site", cur.Site, a.Site}, {"slot", cur.Slot, a.Slot}, {"local_settings", cur.LocalSettings, a.LocalSettings},
	} {
		if f.have != f.given {
			out = append(out, placeField{f.field, f.have})
		}
	}
	return out
}

func (a App) domain() circuit.App {
	return circuit.App{ID: a.ID, DisplayName: a.DisplayName, Switch: circuit.SwitchKind(a.Switch), SubscriptionID: a.Subscription,
		ResourceGroup: a.ResourceGroup, Site: a.Site, Slot: a.Slot, LocalSettings: a.LocalSettings, Linux: a.Linux,
		Guardrail: circuit.Guardrail{MaxOff: a.GuardrailMax, MaxShare: a.GuardrailShare / 100}, HostID: a.HostID, InsightsAppID: a.InsightsAppID,
		SetAsideLimit: a.SetAsideLimit, ResumeFrom: a.ResumeFrom, Channels: a.Channels, Escalate: circuit.Escalation{To: a.EscalateTo, After: time.Duration(a.EscalateAfter)}}
}

// circuitOf is the circuit of app's function with settings s, as a file
// writes it.
func circuitOf(app, function string, s circuit.Settings) Circuit {
	return Circuit{App: app, Function: function, Spec: s.Spec()}
}

func (c Circuit) domain() circuit.Circuit {
	return circuit.Circuit{AppID: c.App, Function: c.Function, Settings: c.Spec.Settings()}
}

func (j Job) domain() jobs.Job {
	tz := j.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return jobs.Job{Name: j.Name, Slug: j.Slug, AppID: j.App, Function: j.Function, Schedule: j.Schedule, TimeZone: tz,
		Grace: time.Duration(j.Grace), MaxDuration: time.Duration(j.MaxDuration), MinDuration: time.Duration(j.MinDuration),
		FailAfter: j.FailAfter, RecoverAfter: j.RecoverAfter, Recipients: j.Recipients, Channels: j.Channels, Tags: j.Tags,
		Misfire: j.Misfire, Paused: j.Paused, CreatedAt: time.Unix(0, 0)}
}

func (w Window) domain() jobs.Window {
	return jobs.Window{AppID: w.App, From: w.From, Until: w.Until, Reason: w.Reason, Recurs: w.Recurs, TimeZone: w.TimeZone, Duration: time.Duration(w.Duration)}
}

// String names an entry for people.
func (c Circuit) String() string { return c.App + "/" + c.Function }

func (w Window) String() string {
	s := fmt.Sprintf("%s to %s", w.From.UTC().Format(time.RFC3339), w.Until.UTC().Format(time.RFC3339))
	if w.Recurs != "" {
		s = fmt.Sprintf("%q (%s, %s each) between %s", w.Recurs, w.TimeZone, w.Duration, s)
	}
	if w.App != "" {
		s += " for " + w.App
	}
	return s + ": " + w.Reason
}
