// Who may see and change what: one check for every route that names an
// app, a job, a channel, a maintenance window or a token (require), and a
// scope that list handlers filter with. Something of another team answers
// as a thing that does not exist: 404, before the handler reads anything.

package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/internal/views"
)

// Owners reads who owns what a request names.
type Owners struct {
	Apps    func(ctx context.Context) ([]circuit.App, error)
	App     func(ctx context.Context, id string) (circuit.App, error)
	Job     func(ctx context.Context, id string) (jobs.Job, error)
	Channel func(ctx context.Context, id string) (alerts.Channel, error)
	Windows func(ctx context.Context) ([]jobs.Window, error)
	Tokens  func(ctx context.Context) ([]auth.IssuedToken, error)
	// Downstream reads a downstream by name.
	Downstream  func(ctx context.Context, name string) (downstream.Downstream, error)
	Downstreams func(ctx context.Context) ([]downstream.Downstream, error)
	// For the audit log's entries, which name their subject in words.
	Channels func(ctx context.Context) ([]alerts.Channel, error)
	Jobs     func(ctx context.Context) ([]jobs.Job, error)
}

// owner is the team that owns what a route names.
type owner struct {
	team  string
	found bool
	// shared things (a channel of no team) every team sees and admins
	// change; Fusebox's own (its loops' jobs, tokens of no team, windows
	// over every app) only admins see.
	shared, fusebox bool
}

// lets says whether p may see what o names, and whether it holds role on it.
func (o owner) lets(p auth.Principal, role auth.Role) (seen, held bool) {
	switch {
	case !o.found:
		return false, false
	case o.fusebox:
		return p.Admin(), p.Admin()
	case o.shared:
		// Shared things are for people who hold a role somewhere: one in
		// no team and with no role sees nothing of anyone's.
		held := p.Top() != auth.RoleNone
		return held, held && (p.Admin() || role == auth.RoleViewer)
	}
	r := p.On(o.team)
	return r.Allows(auth.RoleViewer), r.Allows(role)
}

// errNotYours is how something of another team is answered: as the
// router answers a path that names nothing.
var errNotYours = echo.NewHTTPError(http.StatusNotFound)

// ownedBy is ownerOf as looked up once a request: a route checked by its
// group (viewer) and by itself (operator) reads its owner once.
type ownedBy struct {
	o     owner
	named bool
}

func (s *Server) ownerOnce(c echo.Context) (owner, bool, error) {
	if v, ok := c.Get(keyOwner).(ownedBy); ok {
		return v.o, v.named, nil
	}
	o, named, err := s.ownerOf(c)
	if err == nil {
		c.Set(keyOwner, ownedBy{o, named})
	}
	return o, named, err
}

// ownerOf finds what the route names and its team; named is false for
// routes that name nothing.
func (s *Server) ownerOf(c echo.Context) (o owner, named bool, err error) {
	ctx := c.Request().Context()
	path := strings.TrimPrefix(c.Path(), "/api/v1")
	if app := c.Param("app"); app != "" {
		a, err := s.Owners.App(ctx, app)
		if err != nil {
			return owner{}, true, notFoundOr(err)
		}
		return owner{team: a.Team, found: true}, true, nil
	}
	id := c.Param("id")
	if id == "" {
		return owner{}, false, nil
	}
	switch {
	case strings.HasPrefix(path, "/jobs/maintenance/"), strings.HasPrefix(path, "/maintenance/"):
		ws, err := s.Owners.Windows(ctx)
		if err != nil {
			return owner{}, true, err
		}
		for _, w := range ws {
			if w.ID == id {
				if w.AppID == "" {
					return owner{found: true, fusebox: true}, true, nil
				}
				a, err := s.Owners.App(ctx, w.AppID)
				if err != nil {
					return owner{found: true, fusebox: true}, true, notFoundOr(err) // of an app gone: admins'
				}
				return owner{team: a.Team, found: true}, true, nil
			}
		}
		return owner{}, true, nil
	case strings.HasPrefix(path, "/jobs/"):
		j, err := s.Owners.Job(ctx, id)
		if err != nil {
			return owner{}, true, notFoundOr(err)
		}
		return s.jobOwner(ctx, j)
	case strings.HasPrefix(path, "/downstreams/"):
		d, err := s.Owners.Downstream(ctx, id)
		if errors.Is(err, downstream.ErrNotFound) {
			return owner{}, true, nil
		}
		if err != nil {
			return owner{}, true, err
		}
		return owner{team: d.Team, found: true}, true, nil
	case strings.HasPrefix(path, "/channels/"):
		ch, err := s.Owners.Channel(ctx, id)
		if err != nil {
			return owner{}, true, notFoundOr(err)
		}
		return owner{team: ch.Team, found: true, shared: ch.Team == ""}, true, nil
	case strings.HasPrefix(path, "/tokens/"):
		ts, err := s.Owners.Tokens(ctx)
		if err != nil {
			return owner{}, true, err
		}
		for _, t := range ts {
			if t.ID == id {
				return owner{team: t.Team, found: true, fusebox: t.Team == ""}, true, nil
			}
		}
		return owner{}, true, nil
	}
	return owner{}, false, fmt.Errorf("web: route %s names an id whose owner is not known", c.Path())
}

// jobOwner is a job's team: its app's, else its own; Fusebox's loops'
// jobs are admins'.
func (s *Server) jobOwner(ctx context.Context, j jobs.Job) (owner, bool, error) {
	if jobs.InternalID(j.ID) {
		return owner{found: true, fusebox: true}, true, nil
	}
	if j.AppID == "" {
		return owner{team: j.Team, found: true}, true, nil
	}
	a, err := s.Owners.App(ctx, j.AppID)
	if err != nil {
		return owner{found: true}, true, notFoundOr(err) // of an app gone: roles held on every app
	}
	return owner{team: a.Team, found: true}, true, nil
}

// notFoundOr is nil for a lookup of something missing (the owner stays
// not found), and the error otherwise.
func notFoundOr(err error) error {
	if errors.Is(err, circuit.ErrNotFound) || errors.Is(err, jobs.ErrNoJob) || errors.Is(err, alerts.ErrNoChannel) {
		return nil
	}
	return err
}

// withTeams adds the teams a signed-in person's claims or name are
// members of; tokens carry their own.
func (s *core) withTeams(c echo.Context, p auth.Principal) (auth.Principal, error) {
	if p.Provider == "token" || s.teams == nil {
		return p, nil
	}
	ts, err := s.teams.All(c.Request().Context())
	if err != nil {
		return p, err
	}
	return teams.Apply(ts, p), nil
}

// scope is what one request's principal may see and change, for list
// handlers to filter with.
type scope struct{ p auth.Principal }

func scopeOf(c echo.Context) scope {
	p, _ := principal(c)
	return scope{p: p}
}

// sees says whether the apps of team may be seen ("": an app of no team).
func (sc scope) sees(team string) bool { return sc.p.On(team).Allows(auth.RoleViewer) }

// acts says whether the apps of team may be acted on.
func (sc scope) acts(team string) bool { return sc.p.On(team).Allows(auth.RoleOperator) }

// apps keeps the apps that may be seen.
func (sc scope) apps(all []circuit.App) []circuit.App {
	out := make([]circuit.App, 0, len(all))
	for _, a := range all {
		if sc.sees(a.Team) {
			out = append(out, a)
		}
	}
	return out
}

// teamOf maps each app to its team.
func teamOf(apps []circuit.App) map[string]string {
	m := make(map[string]string, len(apps))
	for _, a := range apps {
		m[a.ID] = a.Team
	}
	return m
}

// seesApp says whether the app id, of the apps listed in owners, may be
// seen; an app not listed (gone) only by roles held on every app.
func (sc scope) seesApp(owners map[string]string, id string) bool {
	return sc.sees(owners[id])
}

// circuits keeps the circuits of apps that may be seen.
func (sc scope) circuits(owners map[string]string, all []circuit.Circuit) []circuit.Circuit {
	out := make([]circuit.Circuit, 0, len(all))
	for _, ci := range all {
		if sc.seesApp(owners, ci.AppID) {
			out = append(out, ci)
		}
	}
	return out
}

// seesJob says whether a job may be seen.
func (sc scope) seesJob(owners map[string]string, j jobs.Job) bool {
	switch {
	case jobs.InternalID(j.ID):
		return sc.p.Admin()
	case j.AppID == "":
		return sc.sees(j.Team)
	}
	return sc.seesApp(owners, j.AppID)
}

// jobs keeps the jobs that may be seen.
func (sc scope) jobs(owners map[string]string, all []jobs.Job) []jobs.Job {
	out := make([]jobs.Job, 0, len(all))
	for _, j := range all {
		if sc.seesJob(owners, j) {
			out = append(out, j)
		}
	}
	return out
}

// seesChannel: a team's channels its members see; shared ones everyone.
// One in no team and with no role sees no channel, shared or not.
func (sc scope) seesChannel(ch alerts.Channel) bool {
	return (ch.Team == "" && sc.p.Top() != auth.RoleNone) || sc.sees(ch.Team)
}

// channels keeps the channels that may be seen.
func (sc scope) channels(all []alerts.Channel) []alerts.Channel {
	out := make([]alerts.Channel, 0, len(all))
	for _, ch := range all {
		if sc.seesChannel(ch) {
			out = append(out, ch)
		}
	}
	return out
}

// seesWindow: a window over one app follows the app; one over every app
// is admins'.
func (sc scope) seesWindow(owners map[string]string, w jobs.Window) bool {
	if w.AppID == "" {
		return sc.p.Admin()
	}
	return sc.seesApp(owners, w.AppID)
}

// emptyBecause says why a signed-in person sees nothing, or "".
// noAppsBecause says why a member of teams that own no app yet sees
// empty pages: an admin has not given the teams any app. It reads the
// request's app list (owners), which most pages read anyway.
func (s *core) noAppsBecause(c echo.Context, p auth.Principal) string {
	if p.Admin() || p.Role != auth.RoleNone || len(p.Teams) == 0 {
		return ""
	}
	owners, err := s.owners(c)
	if err != nil {
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

func (sc scope) emptyBecause() string {
	if sc.p.Top() != auth.RoleNone {
		return ""
	}
	return "You are signed in, but you are in no team and hold no role, so Fusebox shows you nothing. Ask an admin to add you (or one of your groups) to a team on the Teams page."
}

// holds says what a principal holds, for the header: "admin",
// "operator" (of every app), "operator of billing; viewer of orders",
// "no role".
func holds(p auth.Principal) string {
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

// owners maps every app to its team, read once a request.
func (s *core) owners(c echo.Context) (map[string]string, error) {
	if m, ok := c.Get(keyOwners).(map[string]string); ok {
		return m, nil
	}
	apps, err := s.owns.Apps(c.Request().Context())
	if err != nil {
		return nil, err
	}
	m := teamOf(apps)
	c.Set(keyOwners, m)
	return m, nil
}

// jobTeam is the team of a job: its app's, else its own.
func jobTeam(owners map[string]string, j jobs.Job) string {
	if j.AppID != "" {
		return owners[j.AppID]
	}
	return j.Team
}

// actsOnJob says whether the principal operates j.
func (s *core) actsOnJob(c echo.Context, j jobs.Job) bool {
	if jobs.InternalID(j.ID) {
		return scopeOf(c).p.Admin()
	}
	owners, err := s.owners(c)
	return err == nil && scopeOf(c).acts(jobTeam(owners, j))
}

// auditEntries keeps the entries whose subject the principal may see:
// by the team recorded when each was written (entries of no team are for
// roles held on every app; those of teams themselves, admins'). Entries
// from before teams were recorded are judged by their target: a circuit
// or app by its app's team, a channel, token or downstream by theirs;
// never a job by its name, which anyone may choose to look like another
// team's circuit.
func (s *core) auditEntries(c echo.Context, es []audit.Entry, limit int) ([]audit.Entry, error) {
	sc := scopeOf(c)
	if sc.p.Admin() {
		return es[:min(len(es), limit)], nil
	}
	if sc.p.Role != auth.RoleNone {
		out := make([]audit.Entry, 0, min(len(es), limit))
		for _, e := range es {
			if !strings.HasPrefix(e.Target, "team:") {
				if out = append(out, e); len(out) == limit {
					break
				}
			}
		}
		return out, nil
	}
	legacy := slices.ContainsFunc(es, func(e audit.Entry) bool { return !e.Owned })
	seen := map[string]bool{}
	var owners map[string]string
	if legacy {
		ctx := c.Request().Context()
		var err error
		if owners, err = s.owners(c); err != nil {
			return nil, err
		}
		chs, err := s.owns.Channels(ctx)
		if err != nil {
			return nil, err
		}
		toks, err := s.owns.Tokens(ctx)
		if err != nil {
			return nil, err
		}
		ds, err := s.owns.Downstreams(ctx)
		if err != nil {
			return nil, err
		}
		for _, ch := range chs {
			seen["channel:"+ch.ID] = ch.Team != "" && sc.sees(ch.Team)
		}
		for _, t := range toks {
			seen["token:"+t.ID] = t.Team != "" && sc.sees(t.Team)
		}
		for _, d := range ds {
			seen["downstream:"+d.Name] = sc.seesDownstream(d)
		}
	}
	out := make([]audit.Entry, 0, min(len(es), limit))
	for _, e := range es {
		var v bool
		switch {
		case e.Owned:
			v = e.Team != "" && sc.sees(e.Team)
		default:
			var named bool
			v, named = seen[e.Target]
			if app, _, _ := strings.Cut(e.Target, "/"); !named {
				team, isApp := owners[app]
				v = isApp && team != "" && sc.sees(team)
			}
		}
		if v {
			if out = append(out, e); len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// auditRead is how many audit entries to read to show limit: five times
// as many for anyone who may not see them all.
func auditRead(c echo.Context, limit int) int {
	if scopeOf(c).p.Admin() {
		return limit
	}
	return 5 * limit
}

// canChange says whether the principal may change a channel: its team's
// operators, or admins for a shared one.
func canChange(c echo.Context, ch alerts.Channel) bool {
	sc := scopeOf(c)
	if ch.Team == "" {
		return sc.p.Admin()
	}
	return sc.acts(ch.Team)
}

// teamChoice is a form's team select: the teams the principal operates;
// an admin also has every other team and none (labelled none).
func (s *core) teamChoice(c echo.Context, value, none string) (views.TeamChoice, error) {
	sc := scopeOf(c)
	out := views.TeamChoice{Value: value}
	ts, err := s.allTeams(c)
	if err != nil {
		return out, err
	}
	if sc.p.Admin() {
		out.Options = append(out.Options, views.Option{Value: "", Label: none})
	}
	for _, t := range ts {
		if sc.acts(t.Name) {
			out.Options = append(out.Options, views.Option{Value: t.Name, Label: t.Name})
		}
	}
	if out.Value == "" && !sc.p.Admin() && len(out.Options) > 0 {
		out.Value = out.Options[0].Value
	}
	return out, nil
}

func (s *core) allTeams(c echo.Context) ([]teams.Team, error) {
	if s.teams == nil {
		return nil, nil
	}
	return s.teams.All(c.Request().Context())
}

// placeIn says what is wrong with putting something in team, or "": none
// is an admin's to choose; a team must exist and be operated.
func (s *core) placeIn(c echo.Context, team string) (string, error) {
	sc := scopeOf(c)
	if team == "" {
		if sc.p.Admin() {
			return "", nil
		}
		return "choose one of your teams: only an admin keeps things apart from every team", nil
	}
	ts, err := s.allTeams(c)
	if err != nil {
		return "", err
	}
	if _, ok := teams.Find(ts, team); !ok || !sc.acts(team) {
		return "is not a team you operate", nil
	}
	return "", nil
}

// defaultTeam is the team something new goes in when none is named: the
// principal's only team it operates, else none.
func defaultTeam(c echo.Context) string {
	p := scopeOf(c).p
	if ts := p.TeamsWith(auth.RoleOperator); len(ts) == 1 && !p.Admin() {
		return ts[0]
	}
	return ""
}

// teamNamed says whether a request names a team: a form's team field is
// there (even empty: "none"); JSON's is not empty.
func teamNamed(c echo.Context, team string) bool {
	if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		return team != ""
	}
	_, ok := c.Request().Form["team"]
	return ok
}

// ChannelSeen says whether the principal of ctx may name ch; outside a
// person's request (Fusebox's own loops) every channel.
func ChannelSeen(ctx context.Context, ch alerts.Channel) bool {
	p, ok := auth.PrincipalFrom(ctx)
	return !ok || (scope{p: p}).seesChannel(ch)
}

// AppActed says whether the principal of ctx operates app; outside a
// person's request, yes.
func AppActed(ctx context.Context, app circuit.App) bool {
	p, ok := auth.PrincipalFrom(ctx)
	return !ok || (scope{p: p}).acts(app.Team)
}

// operated keeps the apps the principal operates, for forms that make
// something of one.
func operated(c echo.Context, all []circuit.App) []circuit.App {
	sc := scopeOf(c)
	out := make([]circuit.App, 0, len(all))
	for _, a := range all {
		if sc.acts(a.Team) {
			out = append(out, a)
		}
	}
	return out
}

// messagesSeen says which outbox messages the principal may see: those
// about a circuit or queue of an app it sees, or a job or downstream it
// sees.
func (s *core) messagesSeen(c echo.Context) (func(alerts.Message) bool, error) {
	return s.messagesHeld(c, auth.RoleViewer)
}

// messagesActed says which outbox messages the principal may act on
// (resend): those whose subject's team it operates.
func (s *core) messagesActed(c echo.Context) (func(alerts.Message) bool, error) {
	return s.messagesHeld(c, auth.RoleOperator)
}

// messagesHeld says which outbox messages are about something whose team
// the principal holds role on; Fusebox's own jobs are admins'.
func (s *core) messagesHeld(c echo.Context, role auth.Role) (func(alerts.Message) bool, error) {
	p := scopeOf(c).p
	if p.Admin() {
		return func(alerts.Message) bool { return true }, nil
	}
	holds := func(team string) bool { return p.On(team).Allows(role) }
	owners, err := s.owners(c)
	if err != nil {
		return nil, err
	}
	js, err := s.owns.Jobs(c.Request().Context())
	if err != nil {
		return nil, err
	}
	jobHeld := make(map[string]bool, len(js))
	for _, j := range js {
		jobHeld[j.ID] = !jobs.InternalID(j.ID) && holds(jobTeam(owners, j))
	}
	ds, err := s.owns.Downstreams(c.Request().Context())
	if err != nil {
		return nil, err
	}
	downHeld := make(map[string]bool, len(ds))
	for _, d := range ds {
		downHeld[d.Name] = holds(d.Team)
	}
	return func(m alerts.Message) bool {
		sub := m.Subject()
		switch sub.About {
		case alerts.AboutJob:
			return jobHeld[sub.ID]
		case alerts.AboutDownstream:
			return downHeld[sub.ID]
		}
		app, _, _ := strings.Cut(sub.ID, "/")
		return holds(owners[app])
	}, nil
}
