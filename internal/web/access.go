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
		return true, p.Admin() || role == auth.RoleViewer
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
func (sc scope) seesChannel(ch alerts.Channel) bool { return ch.Team == "" || sc.sees(ch.Team) }

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
// a circuit or app (by its app's team), a channel, a token, a job (named
// in words: only when every job of that name may be seen), a window.
// Entries of nothing named (sign-ins) and of things gone are for roles
// held on every app; those of teams themselves, admins'.
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
	ctx := c.Request().Context()
	owners, err := s.owners(c)
	if err != nil {
		return nil, err
	}
	chs, err := s.owns.Channels(ctx)
	if err != nil {
		return nil, err
	}
	js, err := s.owns.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	toks, err := s.owns.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, ch := range chs {
		seen["channel:"+ch.ID] = sc.seesChannel(ch)
	}
	for _, t := range toks {
		seen["token:"+t.ID] = t.Team != "" && sc.sees(t.Team)
	}
	ds, err := s.owns.Downstreams(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		seen["downstream:"+d.Name] = sc.seesDownstream(d)
	}
	for _, j := range js {
		v, ok := seen[j.Name]
		seen[j.Name] = (v || !ok) && sc.seesJob(owners, j)
	}
	out := make([]audit.Entry, 0, min(len(es), limit))
	for _, e := range es {
		app, _, _ := strings.Cut(e.Target, "/")
		v, named := seen[e.Target]
		if _, isApp := owners[app]; isApp && !named {
			v, named = sc.seesApp(owners, app), true
		}
		if named && v {
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
// about a circuit or queue of an app it sees, or a job it sees.
func (s *core) messagesSeen(c echo.Context) (func(alerts.Message) bool, error) {
	sc := scopeOf(c)
	if sc.p.Admin() {
		return func(alerts.Message) bool { return true }, nil
	}
	owners, err := s.owners(c)
	if err != nil {
		return nil, err
	}
	js, err := s.owns.Jobs(c.Request().Context())
	if err != nil {
		return nil, err
	}
	jobSeen := make(map[string]bool, len(js))
	for _, j := range js {
		jobSeen[j.ID] = sc.seesJob(owners, j)
	}
	ds, err := s.owns.Downstreams(c.Request().Context())
	if err != nil {
		return nil, err
	}
	downSeen := make(map[string]bool, len(ds))
	for _, d := range ds {
		downSeen[d.Name] = sc.seesDownstream(d)
	}
	return func(m alerts.Message) bool {
		sub := m.Subject()
		switch sub.About {
		case alerts.AboutJob:
			return jobSeen[sub.ID]
		case alerts.AboutDownstream:
			return downSeen[sub.ID]
		}
		app, _, _ := strings.Cut(sub.ID, "/")
		return sc.seesApp(owners, app)
	}, nil
}
