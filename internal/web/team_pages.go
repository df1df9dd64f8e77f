package web

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/internal/validation"
	"github.com/fusebox/fusebox/internal/views"
)

// The admins' Teams page and API: who is in which team, and which apps
// each owns. Membership changes apply everywhere within teams.TTL.

// teamList shows every team and the form that makes one.
func (s *TeamPages) teamList(c echo.Context) error {
	return s.renderTeams(c, http.StatusOK, views.TeamForm{})
}

// teamsAndApps reads every team and every app.
func (s *TeamPages) teamsAndApps(c echo.Context) ([]teams.Team, []circuit.App, error) {
	ts, err := s.allTeams(c)
	if err != nil {
		return nil, nil, err
	}
	apps, err := s.Apps.List(c.Request().Context())
	return ts, apps, err
}

// appsOf lists the ids of team's apps.
func appsOf(apps []circuit.App, team string) []string {
	out := []string{}
	for _, a := range apps {
		if a.Team == team {
			out = append(out, a.ID)
		}
	}
	return out
}

func (s *TeamPages) renderTeams(c echo.Context, status int, form views.TeamForm) error {
	ts, apps, err := s.teamsAndApps(c)
	if err != nil {
		return err
	}
	m := views.Teams{Page: s.page(c, "Teams", "teams"), Form: form, Shared: funcapp.SharedTargets(apps), SharedStores: funcapp.SharedStores(apps)}
	dev := s.Config.Env == config.Development
	for _, t := range ts {
		r := views.TeamRow{Name: t.Name, Channels: t.Channels, Apps: appsOf(apps, t.Name)}
		for _, mb := range t.Members {
			r.Members = append(r.Members, views.TeamMemberRow{Who: mb.Who, Role: mb.Role.String(), Configured: mb.Configured})
		}
		for _, sc := range t.Scopes {
			r.Scopes = append(r.Scopes, views.TeamScopeRow{Scope: sc.String()})
		}
		for _, sc := range t.ConfiguredScopes {
			r.Scopes = append(r.Scopes, views.TeamScopeRow{Scope: sc.String(), Configured: true})
		}
		if len(r.Scopes) == 0 {
			for _, sc := range teams.Propose(apps, t.Name) {
				r.Proposed = append(r.Proposed, sc.String())
			}
		}
		for _, a := range apps {
			if a.Team == t.Name && !t.Reaches(a, dev) {
				r.Outside = append(r.Outside, a.ID)
			}
		}
		m.Rows = append(m.Rows, r)
	}
	m.Form.Apps = teamApps(apps, form.Name, nil)
	return render(c, status, views.TeamsPage(m))
}

// teamApps are the form's app boxes: ticked those of team, or those picked.
func teamApps(apps []circuit.App, team string, picked []string) []views.TeamApp {
	out := make([]views.TeamApp, 0, len(apps))
	for _, a := range apps {
		checked := a.Team == team && team != ""
		if picked != nil {
			checked = slices.Contains(picked, a.ID)
		}
		out = append(out, views.TeamApp{ID: a.ID, Label: appName(apps, a.ID), Team: a.Team, Checked: checked})
	}
	return out
}

// teamEdit shows one team's form.
func (s *TeamPages) teamEdit(c echo.Context) error {
	t, err := s.teamOf(c)
	if err != nil {
		return err
	}
	apps, err := s.Apps.List(c.Request().Context())
	if err != nil {
		return err
	}
	form := views.TeamForm{Editing: true, Name: t.Name, Members: teams.FormatMembers(t.Members), Channels: strings.Join(t.Channels, ", "),
		Scopes: teams.FormatScopes(t.Scopes), Apps: teamApps(apps, t.Name, nil)}
	if len(t.AllScopes()) == 0 {
		// On upgrade a team has none: what would admit its apps as they
		// are is proposed, for the admin to confirm by saving.
		form.Scopes, form.ScopesProposed = teams.FormatScopes(teams.Propose(apps, t.Name)), true
	}
	return render(c, http.StatusOK, views.TeamEditPage(views.TeamEdit{Page: s.page(c, "Team "+t.Name, "teams"), Form: form}))
}

func (s *TeamPages) teamOf(c echo.Context) (teams.Team, error) {
	ts, err := s.allTeams(c)
	if err != nil {
		return teams.Team{}, err
	}
	t, ok := teams.Find(ts, c.Param("team"))
	if !ok {
		return t, echo.NewHTTPError(http.StatusNotFound)
	}
	return t, nil
}

// teamCreate and teamUpdate save the form.
func (s *TeamPages) teamCreate(c echo.Context) error { return s.teamSubmit(c, false) }
func (s *TeamPages) teamUpdate(c echo.Context) error { return s.teamSubmit(c, true) }

func (s *TeamPages) teamSubmit(c echo.Context, editing bool) error {
	form, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	f := views.TeamForm{Editing: editing, Name: strings.TrimSpace(c.FormValue("name")), Members: c.FormValue("members"), Channels: c.FormValue("channels"),
		Scopes: c.FormValue("scopes")}
	if editing {
		cur, err := s.teamOf(c)
		if err != nil {
			return err
		}
		f.Name = cur.Name
	}
	picked := form["app"]
	if picked == nil {
		picked = []string{}
	}
	var scopes *string // a form without the field (an older page) leaves them
	if _, ok := form["scopes"]; ok {
		scopes = &f.Scopes
	}
	err = s.saveTeam(c, f.Name, f.Members, scopes, splitComma(f.Channels), picked, !editing)
	var ve validation.Error
	if errors.As(err, &ve) {
		f.Errors = map[string]string{}
		for _, fe := range ve {
			f.Errors[fe.Field] = fe.Message
		}
		apps, lerr := s.Apps.List(c.Request().Context())
		if lerr != nil {
			return lerr
		}
		f.Apps = teamApps(apps, f.Name, picked)
		if editing {
			return render(c, http.StatusUnprocessableEntity, views.TeamEditPage(views.TeamEdit{Page: s.page(c, "Team "+f.Name, "teams"), Form: f}))
		}
		return s.renderTeams(c, http.StatusUnprocessableEntity, f)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/teams")
}

// saveTeam checks and stores a team, moves the apps picked into it and
// those no longer picked out of it (to admins' alone), and audits it.
// picked nil leaves the apps as they are; scopesText nil, its scopes.
// An app moved in must lie in the team's scopes.
func (s *TeamPages) saveTeam(c echo.Context, name, membersText string, scopesText *string, channels, picked []string, create bool) error {
	ctx := c.Request().Context()
	members, err := teams.ParseMembers(membersText)
	if err != nil {
		return validation.Error{{Field: "members", Message: err.Error()}}
	}
	ts, err := s.allTeams(c)
	if err != nil {
		return err
	}
	current, exists := teams.Find(ts, name)
	t := teams.Team{Name: name, Members: members, Channels: channels, Scopes: current.Scopes, ConfiguredScopes: current.ConfiguredScopes}
	var v validation.Error
	if scopesText != nil {
		if t.Scopes, err = teams.ParseScopes(*scopesText); err != nil {
			v = append(v, validation.FieldError{Field: "scopes", Message: err.Error()})
		}
	}
	for field, msg := range t.Check() {
		v = append(v, validation.FieldError{Field: field, Message: msg})
	}
	if create && exists {
		v = append(v, validation.FieldError{Field: "name", Message: "a team of this name exists already"})
	}
	if err := s.KnownChannels.Check(ctx, channels); err != nil {
		if !errors.As(err, new(validation.Error)) {
			return err
		}
		v = append(v, validation.FieldError{Field: "channels", Message: fieldProblems(err)["channels"]})
	}
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	if scopesText != nil {
		// Scopes narrowed past an app the team keeps would leave it
		// reachable: move it first.
		var outside []string
		for _, a := range apps {
			keeps := a.Team == name && (picked == nil || slices.Contains(picked, a.ID))
			if keeps && !t.Reaches(a, s.Config.Env == config.Development) {
				outside = append(outside, a.ID)
			}
		}
		if len(outside) > 0 {
			v = append(v, validation.FieldError{Field: "scopes", Message: "would leave the team's apps " + strings.Join(outside, ", ") + " outside its scopes: include their resource groups, or move them to another team first"})
		}
	}
	for _, id := range picked {
		i := slices.IndexFunc(apps, func(a circuit.App) bool { return a.ID == id })
		switch {
		case i < 0:
			v = append(v, validation.FieldError{Field: "apps", Message: "there is no app " + id})
		case apps[i].Team != name:
			if problem := access.NameProblem(name, id); problem != "" {
				v = append(v, validation.FieldError{Field: "apps", Message: id + ": its name names another team, so it cannot move to " + name + ": register it anew in " + name})
			} else if err := t.Admits(apps[i], s.Config.Env == config.Development); err != nil {
				v = append(v, validation.FieldError{Field: "apps", Message: id + ": " + err.Error()})
			}
		}
	}
	if len(v) > 0 {
		return v
	}
	if err := s.TeamStore.Put(ctx, t); err != nil {
		return err
	}
	p, _ := principal(c)
	actx, cancel := detached(c)
	defer cancel()
	for _, a := range apps {
		in := slices.Contains(picked, a.ID)
		switch {
		case picked == nil, in == (a.Team == name):
			continue
		case in:
			err = s.AppTeams.SetTeam(actx, a.ID, name)
		default:
			err = s.AppTeams.SetTeam(actx, a.ID, "")
		}
		if err != nil {
			return err
		}
		if err := s.Audit.Append(actx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "moved app", Target: a.ID, Detail: cmp.Or(a.Team, "no team") + " → " + teamIf(in, name)}); err != nil {
			return err
		}
	}
	s.teams.Forget()
	action := "changed team"
	if create {
		action = "created team"
	}
	return s.Audit.Append(actx, audit.Entry{At: s.Now(), Actor: p.Name, Action: action, Target: "team:" + name,
		Detail: teams.FormatMembersLine(members) + "; channels " + cmp.Or(strings.Join(channels, ", "), "none") +
			"; scopes " + cmp.Or(strings.TrimSpace(strings.ReplaceAll(teams.FormatScopes(t.Scopes), "\n", ", ")), "none")})
}

func teamIf(in bool, name string) string {
	if in {
		return name
	}
	return "no team"
}

// teamDelete removes a team that owns no app.
func (s *TeamPages) teamDelete(c echo.Context) error {
	if err := s.deleteTeam(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/teams")
}

func (s *TeamPages) deleteTeam(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("team")
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(apps, func(a circuit.App) bool { return a.Team == name }) {
		return echo.NewHTTPError(http.StatusConflict, "The team still owns apps: move them to another team first.")
	}
	if err := s.TeamStore.Delete(ctx, name); errors.Is(err, circuit.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound)
	} else if err != nil {
		return err
	}
	s.teams.Forget()
	p, _ := principal(c)
	actx, cancel := detached(c)
	defer cancel()
	return s.Audit.Append(actx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "deleted team", Target: "team:" + name})
}

// teamJSON is a team in the API.
type teamJSON struct {
	Name     string       `json:"name"`
	Members  []memberJSON `json:"members"`
	Channels []string     `json:"channels"`
	Apps     []string     `json:"apps"`
	// Scopes are where in Azure its apps may live, those of the
	// environment included.
	Scopes []string `json:"scopes"`
	// ConfiguredScopes are those of Scopes set in FUSEBOX_TEAM_SCOPES.
	ConfiguredScopes []string `json:"configured_scopes,omitempty"`
}

type memberJSON struct {
	Who        string `json:"who"`
	Role       string `json:"role"`
	Configured bool   `json:"configured,omitempty"`
}

// apiTeamList lists the teams, their members and apps.
func (s *TeamPages) apiTeamList(c echo.Context) error {
	ts, apps, err := s.teamsAndApps(c)
	if err != nil {
		return err
	}
	out := struct {
		Teams []teamJSON `json:"teams"`
	}{Teams: []teamJSON{}}
	for _, t := range ts {
		j := teamJSON{Name: t.Name, Members: []memberJSON{}, Channels: nonNil(t.Channels), Apps: appsOf(apps, t.Name), Scopes: []string{}}
		for _, sc := range t.AllScopes() {
			j.Scopes = append(j.Scopes, sc.String())
		}
		for _, sc := range t.ConfiguredScopes {
			j.ConfiguredScopes = append(j.ConfiguredScopes, sc.String())
		}
		for _, m := range t.Members {
			j.Members = append(j.Members, memberJSON{Who: m.Who, Role: m.Role.String(), Configured: m.Configured})
		}
		out.Teams = append(out.Teams, j)
	}
	return c.JSON(http.StatusOK, out)
}

// apiTeamPut creates or replaces a team: its members (those not set in
// the environment), channels and, when given, its apps.
func (s *TeamPages) apiTeamPut(c echo.Context) error {
	var body struct {
		Members  *[]memberJSON `json:"members"`  // absent: as they are
		Channels *[]string     `json:"channels"` // absent: as they are
		Apps     []string      `json:"apps"`
		Scopes   *[]string     `json:"scopes"` // absent: as they are
	}
	if err := c.Bind(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"members": [{"who": "<group id>", "role": "operator"}], "channels": [], "apps": ["orders-prod"]}.`)
	}
	ts, err := s.allTeams(c)
	if err != nil {
		return err
	}
	current, exists := teams.Find(ts, c.Param("team"))
	// What the body leaves out stays as it is: a client that sets only
	// scopes (fusebox apply) cannot put back a member removed meanwhile.
	members := body.Members
	if members == nil {
		kept := []memberJSON{}
		for _, m := range current.Members {
			kept = append(kept, memberJSON{Who: m.Who, Role: m.Role.String(), Configured: m.Configured})
		}
		members = &kept
	}
	channels := current.Channels
	if body.Channels != nil {
		channels = *body.Channels
	}
	var text strings.Builder
	for _, m := range *members {
		if !m.Configured {
			text.WriteString(m.Role + " " + m.Who + "\n")
		}
	}
	var scopes *string
	if body.Scopes != nil {
		joined := strings.Join(*body.Scopes, "\n")
		scopes = &joined
	}
	err = s.saveTeam(c, c.Param("team"), text.String(), scopes, channels, body.Apps, false)
	var ve validation.Error
	if errors.As(err, &ve) {
		fields := map[string]string{}
		for _, f := range ve {
			fields[f.Field] = f.Message
		}
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the team is not valid", "fields": fields})
	}
	if err != nil {
		return err
	}
	if exists {
		return c.NoContent(http.StatusNoContent)
	}
	return c.NoContent(http.StatusCreated)
}

// apiTeamDelete removes a team that owns no app.
func (s *TeamPages) apiTeamDelete(c echo.Context) error {
	if err := s.deleteTeam(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiMe says who the caller is and what it holds: what export and apply
// check a file against.
func (s *TeamPages) apiMe(c echo.Context) error {
	p, _ := principal(c)
	out := struct {
		Name  string            `json:"name"`
		Role  string            `json:"role"` // on every app; admin: Fusebox itself too
		Teams map[string]string `json:"teams"`
	}{Name: p.Name, Role: p.Role.String(), Teams: map[string]string{}}
	for t, r := range p.Teams {
		out.Teams[t] = r.String()
	}
	return c.JSON(http.StatusOK, out)
}
