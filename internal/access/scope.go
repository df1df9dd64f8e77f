package access

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/teams"
)

// Scope is what one principal may see and change, for lists to be
// filtered with and forms to offer.
type Scope struct{ P auth.Principal }

// For is p's scope.
func For(p auth.Principal) Scope { return Scope{P: p} }

// Admin says the principal manages Fusebox itself.
func (sc Scope) Admin() bool { return sc.P.Admin() }

// Sees says whether the apps of team may be seen ("": an app of no team).
func (sc Scope) Sees(team string) bool { return sc.P.On(team).Allows(auth.RoleViewer) }

// Acts says whether the apps of team may be acted on.
func (sc Scope) Acts(team string) bool { return sc.P.On(team).Allows(auth.RoleOperator) }

// ActsAnywhere says whether the principal operates any app: forms show
// their buttons; what each names is checked when it is sent.
func (sc Scope) ActsAnywhere() bool { return sc.P.Top().Allows(auth.RoleOperator) }

// Creates says whether the principal may make something of a team (a
// downstream, a channel): it operates a team, or every app.
func (sc Scope) Creates() bool {
	return sc.Admin() || sc.Acts("") || len(sc.P.TeamsWith(auth.RoleOperator)) > 0
}

// Apps keeps the apps that may be seen.
func (sc Scope) Apps(all []circuit.App) []circuit.App {
	return keep(all, func(a circuit.App) bool { return sc.Sees(a.Team) })
}

// Operated keeps the apps the principal operates, for forms that make
// something of one.
func (sc Scope) Operated(all []circuit.App) []circuit.App {
	return keep(all, func(a circuit.App) bool { return sc.Acts(a.Team) })
}

// TeamOf maps each app to its team.
func TeamOf(apps []circuit.App) map[string]string {
	m := make(map[string]string, len(apps))
	for _, a := range apps {
		m[a.ID] = a.Team
	}
	return m
}

// SeesApp says whether the app id, of the apps listed in owners, may be
// seen; an app not listed (gone) only by roles held on every app.
func (sc Scope) SeesApp(owners map[string]string, id string) bool {
	return sc.Sees(owners[id])
}

// Circuits keeps the circuits of apps that may be seen.
func (sc Scope) Circuits(owners map[string]string, all []circuit.Circuit) []circuit.Circuit {
	return keep(all, func(c circuit.Circuit) bool { return sc.SeesApp(owners, c.AppID) })
}

// JobTeam is the team of a job: its app's, else its own.
func JobTeam(owners map[string]string, j jobs.Job) string {
	if j.AppID != "" {
		return owners[j.AppID]
	}
	return j.Team
}

// SeesJob says whether a job may be seen; Fusebox's loops' jobs are
// admins'.
func (sc Scope) SeesJob(owners map[string]string, j jobs.Job) bool {
	if jobs.InternalID(j.ID) {
		return sc.Admin()
	}
	return sc.Sees(JobTeam(owners, j))
}

// ActsOnJob says whether the principal operates j.
func (sc Scope) ActsOnJob(owners map[string]string, j jobs.Job) bool {
	if jobs.InternalID(j.ID) {
		return sc.Admin()
	}
	return sc.Acts(JobTeam(owners, j))
}

// Jobs keeps the jobs that may be seen.
func (sc Scope) Jobs(owners map[string]string, all []jobs.Job) []jobs.Job {
	return keep(all, func(j jobs.Job) bool { return sc.SeesJob(owners, j) })
}

// SeesChannel: a team's channels its members see; shared ones everyone
// who holds a role somewhere. One in no team and with no role sees no
// channel, shared or not.
func (sc Scope) SeesChannel(ch alerts.Channel) bool {
	return (ch.Team == "" && sc.P.Top() != auth.RoleNone) || sc.Sees(ch.Team)
}

// ChangesChannel says whether the principal may change ch: its team's
// operators, or admins for a shared one.
func (sc Scope) ChangesChannel(ch alerts.Channel) bool {
	if ch.Team == "" {
		return sc.Admin()
	}
	return sc.Acts(ch.Team)
}

// Channels keeps the channels that may be seen.
func (sc Scope) Channels(all []alerts.Channel) []alerts.Channel {
	return keep(all, sc.SeesChannel)
}

// SeesDelivery says whether the principal sees how deliveries to a
// destination fare: an admin every one, others a channel they see.
func (sc Scope) SeesDelivery(destination string, channels map[string]alerts.Channel) bool {
	if sc.Admin() {
		return true
	}
	id, isChannel := strings.CutPrefix(destination, alerts.ChannelPrefix)
	ch, known := channels[id]
	return isChannel && known && sc.SeesChannel(ch)
}

// SeesWindow: a window over one app follows the app; one over every app
// is admins'.
func (sc Scope) SeesWindow(owners map[string]string, w jobs.Window) bool {
	if w.AppID == "" {
		return sc.Admin()
	}
	return sc.SeesApp(owners, w.AppID)
}

// SeesDownstream says whether the principal sees d: as it sees an app of
// d's team.
func (sc Scope) SeesDownstream(d downstream.Downstream) bool { return sc.Sees(d.Team) }

// AddsMember says whether the principal may make a circuit of app a
// member of a downstream of team: an app of the downstream's team (any
// app for a downstream of no team) that the principal operates.
func (sc Scope) AddsMember(team string, app circuit.App) bool {
	return (team == "" || app.Team == team) && sc.Acts(app.Team)
}

// SeesFaults says whether the principal sees rows of every table that do
// not read: an admin's to mend.
func (sc Scope) SeesFaults() bool { return sc.Admin() }

// Tokens keeps the tokens the principal manages: an admin every one, a
// team's operator the team's.
func (sc Scope) Tokens(all []auth.IssuedToken) []auth.IssuedToken {
	return keep(all, func(t auth.IssuedToken) bool { return sc.Admin() || (t.Team != "" && sc.Acts(t.Team)) })
}

// Issues is the highest role a token of team the principal issues may
// hold: a team's token is at most its operator.
func (sc Scope) Issues(team string) auth.Role {
	r := sc.P.On(team)
	if team != "" {
		r = min(r, auth.RoleOperator)
	}
	return r
}

// BadgeTeam is the team whose badges the principal is shown: every job's
// for an admin, else the one team it operates (with several, none).
func (sc Scope) BadgeTeam() (string, bool) {
	if sc.Admin() {
		return "", true
	}
	ts := sc.P.TeamsWith(auth.RoleOperator)
	if len(ts) == 1 && sc.P.Role == auth.RoleNone {
		return ts[0], true
	}
	return "", false
}

// PlaceIn says what is wrong with putting something in team, or "": none
// is an admin's to choose; a team must exist (in all) and be operated.
func (sc Scope) PlaceIn(all []teams.Team, team string) string {
	if team == "" {
		if sc.Admin() {
			return ""
		}
		return "choose one of your teams: only an admin keeps things apart from every team"
	}
	if _, ok := teams.Find(all, team); !ok || !sc.Acts(team) {
		return "is not a team you operate"
	}
	return ""
}

// PlaceWindow says what is wrong with a maintenance window over the app
// appID (of the apps listed), or "": one over every app is an admin's.
func (sc Scope) PlaceWindow(apps []circuit.App, appID string) string {
	if appID == "" {
		if sc.Admin() {
			return ""
		}
		return "Choose one of your apps: a window over every app is an admin's to set."
	}
	// Another team's app reads as one that does not exist.
	if !slices.ContainsFunc(sc.Operated(apps), func(a circuit.App) bool { return a.ID == appID }) {
		return "There is no such app."
	}
	return ""
}

// TeamChoices are the teams of all something new may go in: the teams
// the principal operates; none (first) only for an admin.
func (sc Scope) TeamChoices(all []teams.Team) (names []string, none bool) {
	for _, t := range all {
		if sc.Acts(t.Name) {
			names = append(names, t.Name)
		}
	}
	return names, sc.Admin()
}

// DefaultTeam is the team something new goes in when none is named: the
// principal's only team it operates, else none.
func (sc Scope) DefaultTeam() string {
	if ts := sc.P.TeamsWith(auth.RoleOperator); len(ts) == 1 && !sc.Admin() {
		return ts[0]
	}
	return ""
}

// EmptyBecause says why a signed-in person sees nothing, or "".
func (sc Scope) EmptyBecause() string {
	if sc.P.Top() != auth.RoleNone {
		return ""
	}
	return "You are signed in, but you are in no team and hold no role, so Fusebox shows you nothing. Ask an admin to add you (or one of your groups) to a team on the Teams page."
}

// NoAppsBecause says why a member of teams that own no app yet (of the
// apps in owners) sees empty pages, or "".
func (sc Scope) NoAppsBecause(owners map[string]string) string {
	p := sc.P
	if p.Admin() || p.Role != auth.RoleNone || len(p.Teams) == 0 {
		return ""
	}
	for _, team := range owners {
		if _, ok := p.Teams[team]; ok && team != "" {
			return ""
		}
	}
	names := make([]string, 0, len(p.Teams))
	for t := range p.Teams {
		names = append(names, t)
	}
	slices.Sort(names)
	return fmt.Sprintf("Your team (%s) owns no app yet, so there is nothing to show. Ask an admin to move your apps into it on the Teams page, or to guard a found app into it.", strings.Join(names, ", "))
}

// Holds says what a principal holds, for the header: "admin", "operator"
// (of every app), "operator of billing; viewer of orders", "no role".
func (sc Scope) Holds() string {
	p := sc.P
	var parts []string
	if p.Role != auth.RoleNone {
		parts = append(parts, p.Role.String())
	}
	for _, role := range []auth.Role{auth.RoleOperator, auth.RoleViewer} {
		var of []string
		for _, t := range p.TeamsWith(role) {
			if p.Teams[t] == role {
				of = append(of, t)
			}
		}
		if len(of) > 0 {
			parts = append(parts, role.String()+" of "+strings.Join(of, ", "))
		}
	}
	if len(parts) == 0 {
		return "no role"
	}
	return strings.Join(parts, "; ")
}

func keep[T any](all []T, ok func(T) bool) []T {
	out := make([]T, 0, len(all))
	for _, x := range all {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
