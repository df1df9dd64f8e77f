// How the web layer asks the access policy (internal/access): which thing
// a route names, the principal's scope for list handlers to filter with,
// and how the policy's refusals are answered. The rules are the policy's.

package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/internal/views"
)

// errNotYours is how something of another team is answered: as the
// router answers a path that names nothing.
var errNotYours = echo.NewHTTPError(http.StatusNotFound)

// named are the routes' prefixes (after /api/v1) whose :id names a thing
// of a kind; :app always names an app. Longer prefixes come first.
var named = []struct {
	prefix string
	kind   access.Kind
}{
	{"/jobs/maintenance/", access.Window},
	{"/maintenance/", access.Window},
	{"/jobs/", access.Job},
	{"/downstreams/", access.Downstream},
	{"/channels/", access.Channel},
	{"/tokens/", access.Token},
}

// refOf is what the route names.
func refOf(c echo.Context) (access.Ref, error) {
	if app := c.Param("app"); app != "" {
		return access.Ref{Kind: access.App, ID: app}, nil
	}
	id := c.Param("id")
	if id == "" {
		return access.Ref{}, nil
	}
	path := strings.TrimPrefix(c.Path(), "/api/v1")
	for _, n := range named {
		if strings.HasPrefix(path, n.prefix) {
			return access.Ref{Kind: n.kind, ID: id}, nil
		}
	}
	return access.Ref{}, fmt.Errorf("web: route %s names an id whose owner is not known", c.Path())
}

// ownerOnce is the owner of what the route names (nil: nothing), looked
// up once a request: a route checked by its group (viewer) and by itself
// (operator) reads its owner once.
func (s *Server) ownerOnce(c echo.Context) (*access.Owner, error) {
	if o, ok := c.Get(keyOwner).(*access.Owner); ok {
		return o, nil
	}
	ref, err := refOf(c)
	if err != nil || ref.Kind == access.Nothing {
		return nil, err
	}
	o, err := s.policy.OwnerOf(c.Request().Context(), ref)
	if err != nil {
		return nil, err
	}
	c.Set(keyOwner, &o)
	return &o, nil
}

// refused answers the policy's refusals.
func refused(err error) error {
	var re access.RoleError
	switch {
	case errors.Is(err, access.ErrNotYours):
		return errNotYours
	case errors.Is(err, access.ErrShared):
		return echo.NewHTTPError(http.StatusForbidden, "This is shared between teams: it needs the admin role to change.")
	case errors.Is(err, access.ErrNoPrincipal):
		return echo.NewHTTPError(http.StatusUnauthorized, "Sign in first.")
	case errors.As(err, &re):
		return echo.NewHTTPError(http.StatusForbidden, re.Error())
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

// scopeOf is what the request's principal may see and change.
func scopeOf(c echo.Context) access.Scope {
	p, _ := principal(c)
	return access.For(p)
}

// noAppsBecause says why a member of teams that own no app yet sees
// empty pages, from the request's app list (owners), which most pages
// read anyway.
func (s *core) noAppsBecause(c echo.Context) string {
	sc := scopeOf(c)
	if sc.EmptyBecause() != "" || sc.Admin() {
		return ""
	}
	owners, err := s.owners(c)
	if err != nil {
		return ""
	}
	return sc.NoAppsBecause(owners)
}

// owners maps every app to its team, read once a request.
func (s *core) owners(c echo.Context) (map[string]string, error) {
	if m, ok := c.Get(keyOwners).(map[string]string); ok {
		return m, nil
	}
	apps, err := s.policy.Read.Apps(c.Request().Context())
	if err != nil {
		return nil, err
	}
	m := access.TeamOf(apps)
	c.Set(keyOwners, m)
	return m, nil
}

// actsOnJob says whether the principal operates j.
func (s *core) actsOnJob(c echo.Context, j jobs.Job) bool {
	owners, err := s.owners(c)
	return err == nil && scopeOf(c).ActsOnJob(owners, j)
}

// auditEntries keeps the entries whose subject the principal may see.
func (s *core) auditEntries(c echo.Context, es []audit.Entry, limit int) ([]audit.Entry, error) {
	return s.policy.AuditEntries(c.Request().Context(), func() (map[string]string, error) { return s.owners(c) }, es, limit)
}

// teamChoice is a form's team select: the teams the principal operates;
// an admin also has none (labelled none).
func (s *core) teamChoice(c echo.Context, value, none string) (views.TeamChoice, error) {
	sc := scopeOf(c)
	out := views.TeamChoice{Value: value}
	ts, err := s.allTeams(c)
	if err != nil {
		return out, err
	}
	names, withNone := sc.TeamChoices(ts)
	if withNone {
		out.Options = append(out.Options, views.Option{Value: "", Label: none})
	}
	for _, n := range names {
		out.Options = append(out.Options, views.Option{Value: n, Label: n})
	}
	if out.Value == "" && !sc.Admin() && len(out.Options) > 0 {
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

// placeIn says what is wrong with putting something in team, or "".
func (s *core) placeIn(c echo.Context, team string) (string, error) {
	ts, err := s.allTeams(c)
	if err != nil {
		return "", err
	}
	return scopeOf(c).PlaceIn(ts, team), nil
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

// messagesSeen says which outbox messages the principal may see.
func (s *core) messagesSeen(c echo.Context) (func(alerts.Message) bool, error) {
	return s.messagesHeld(c, auth.RoleViewer)
}

// messagesActed says which outbox messages the principal may resend.
func (s *core) messagesActed(c echo.Context) (func(alerts.Message) bool, error) {
	return s.messagesHeld(c, auth.RoleOperator)
}

func (s *core) messagesHeld(c echo.Context, role auth.Role) (func(alerts.Message) bool, error) {
	owners, err := s.owners(c)
	if err != nil {
		return nil, err
	}
	return s.policy.Messages(c.Request().Context(), owners, role)
}
