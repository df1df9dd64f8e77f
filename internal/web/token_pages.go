package web

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/views"
)

// API tokens people issue on the Tokens page and through the API: shown
// once, stored as their hash, revocable at once (every instance refuses a
// revoked token within auth.IssuedTokenTTL).

// defaultTokenDays is an issued token's life when none is asked for.
const defaultTokenDays = 90

// tokenList shows every issued token and the form that issues one.
func (s *TokenPages) tokenList(c echo.Context) error {
	return s.renderTokens(c, http.StatusOK, views.TokenForm{Days: strconv.Itoa(defaultTokenDays), Role: "viewer"}, "")
}

// tokensOf keeps the tokens the principal manages: an admin every one, a
// team's operator the team's.
func tokensOf(c echo.Context, list []auth.IssuedToken) []auth.IssuedToken {
	return scopeOf(c).Tokens(list)
}

func (s *TokenPages) renderTokens(c echo.Context, status int, form views.TokenForm, issued string) error {
	list, err := s.Tokens.List(c.Request().Context())
	if err != nil {
		return err
	}
	now := s.Now()
	list = tokensOf(c, list)
	slices.SortFunc(list, func(a, b auth.IssuedToken) int { return b.CreatedAt.Compare(a.CreatedAt) })
	m := views.Tokens{Page: s.page(c, "API tokens", "tokens"), Form: form, Issued: issued, Admin: scopeOf(c).Admin()}
	if m.Form.Team, err = s.teamChoice(c, form.Team.Value, "none: on every app (an admin's token)"); err != nil {
		return err
	}
	for _, t := range list {
		m.Rows = append(m.Rows, views.TokenRow{ID: t.ID, Name: t.Name, Role: t.Role.String(), Team: cmp.Or(t.Team, "every app"), CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt,
			Expires: t.Expires, LastUsed: t.LastUsed, State: t.State(now)})
	}
	return render(c, status, views.TokensPage(m))
}

// tokenIssue issues a token from the form and shows it, once.
func (s *TokenPages) tokenIssue(c echo.Context) error {
	form := views.TokenForm{Name: strings.TrimSpace(c.FormValue("name")), Role: c.FormValue("role"), Days: strings.TrimSpace(c.FormValue("expires_in_days")),
		Team: views.TeamChoice{Value: c.FormValue("team")}}
	days, err := strconv.Atoi(form.Days)
	if err != nil {
		days = -1
	}
	p, _ := principal(c)
	token, problems, err := s.issue(c, p, form.Name, form.Role, form.Team.Value, days)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		form.Errors = problems
		return s.renderTokens(c, http.StatusUnprocessableEntity, form, "")
	}
	return s.renderTokens(c, http.StatusOK, views.TokenForm{Days: strconv.Itoa(defaultTokenDays), Role: "viewer"}, token)
}

// issue checks and stores a token p asked for; problems by field.
// A token of a team holds role on its apps alone; one of no team, an
// admin's to issue, holds role on every app.
func (s *TokenPages) issue(c echo.Context, p auth.Principal, name, roleName, team string, days int) (string, map[string]string, error) {
	role, _ := auth.ParseRole(roleName)
	now := s.Now()
	life := time.Duration(days) * 24 * time.Hour
	issuer := access.For(p).Issues(team)
	problems := auth.CheckIssue(name, role, issuer, life, now, p.Until)
	if problem, err := s.placeIn(c, team); err != nil {
		return "", nil, err
	} else if problem != "" {
		problems["team"] = problem
	}
	if len(problems) > 0 {
		return "", problems, nil
	}
	id, token, hash := auth.NewIssuedToken()
	t := auth.IssuedToken{ID: id, Name: name, Role: role, Team: team, CreatedBy: p.Name, CreatedAt: now, Expires: now.Add(life), Hash: hash}
	if err := s.Tokens.Insert(c.Request().Context(), t); err != nil {
		return "", nil, err
	}
	s.issued.Forget()
	actx, cancel := detached(c)
	defer cancel()
	err := s.Audit.Append(actx, audit.Entry{At: now, Actor: p.Name, Action: "issued API token", Target: "token:" + id,
		Detail: name + ", " + role.String() + " of " + cmp.Or(team, "every app") + ", until " + t.Expires.UTC().Format(time.DateOnly)})
	return token, nil, err
}

// tokenRevoke revokes a token at once.
func (s *TokenPages) tokenRevoke(c echo.Context) error {
	if err := s.revoke(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/tokens")
}

func (s *TokenPages) revoke(c echo.Context) error {
	id := c.Param("id")
	if _, ok := auth.IssuedID("fbt_" + id + ".x"); !ok {
		return echo.NewHTTPError(http.StatusNotFound, "There is no such token.")
	}
	p, _ := principal(c)
	now := s.Now()
	err := s.Tokens.Revoke(c.Request().Context(), id, now)
	if errors.Is(err, auth.ErrNoToken) {
		return echo.NewHTTPError(http.StatusNotFound, "There is no such token.")
	}
	if err != nil {
		return err
	}
	s.issued.Forget()
	actx, cancel := detached(c)
	defer cancel()
	return s.Audit.Append(actx, audit.Entry{At: now, Actor: p.Name, Action: "revoked API token", Target: "token:" + id})
}

// tokenJSON is an issued token in the API; the token itself only in the
// answer that issued it.
type tokenJSON struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Team      string     `json:"team,omitempty"` // empty: the role on every app
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	Expires   time.Time  `json:"expires_at"`
	LastUsed  *time.Time `json:"last_used_at,omitempty"`
	State     string     `json:"state"`
	Token     string     `json:"token,omitempty"`
}

func toTokenJSON(t auth.IssuedToken, now time.Time) tokenJSON {
	j := tokenJSON{ID: t.ID, Name: t.Name, Role: t.Role.String(), Team: t.Team, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, Expires: t.Expires, State: t.State(now)}
	if !t.LastUsed.IsZero() {
		j.LastUsed = &t.LastUsed
	}
	return j
}

// apiTokenList lists the issued tokens.
func (s *TokenPages) apiTokenList(c echo.Context) error {
	list, err := s.Tokens.List(c.Request().Context())
	if err != nil {
		return err
	}
	now := s.Now()
	out := struct {
		Tokens []tokenJSON `json:"tokens"`
	}{Tokens: []tokenJSON{}}
	for _, t := range tokensOf(c, list) {
		out.Tokens = append(out.Tokens, toTokenJSON(t, now))
	}
	return c.JSON(http.StatusOK, out)
}

// apiTokenIssue issues a token; the answer is the only place it is seen.
func (s *TokenPages) apiTokenIssue(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
		Role string `json:"role"`
		Team string `json:"team"`
		Days int    `json:"expires_in_days"`
	}
	if err := c.Bind(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"name": "ci-deploy", "role": "operator", "expires_in_days": 90}.`)
	}
	if body.Days == 0 {
		body.Days = defaultTokenDays
	}
	p, _ := principal(c)
	if body.Team == "" {
		body.Team = scopeOf(c).DefaultTeam()
	}
	token, problems, err := s.issue(c, p, strings.TrimSpace(body.Name), body.Role, body.Team, body.Days)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the token cannot be issued", "fields": problems})
	}
	id, _ := auth.IssuedID(token)
	now := s.Now()
	role, _ := auth.ParseRole(body.Role)
	j := toTokenJSON(auth.IssuedToken{ID: id, Name: strings.TrimSpace(body.Name), Role: role, Team: body.Team, CreatedBy: p.Name, CreatedAt: now, Expires: now.Add(time.Duration(body.Days) * 24 * time.Hour)}, now)
	j.Token = token
	return c.JSON(http.StatusCreated, j)
}

// apiTokenRevoke revokes a token.
func (s *TokenPages) apiTokenRevoke(c echo.Context) error {
	if err := s.revoke(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
