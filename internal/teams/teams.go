// Package teams says who may see and change which apps. A team owns apps
// (circuit.App.Team); its members hold viewer or operator on them. People
// become members from where they already are: a claim value their
// identity provider sends (an Entra ID group's object id or name, an app
// role), or a local user's name, mapped to a team and a role in
// configuration (FUSEBOX_TEAM_MEMBERS) or on the Teams page.
package teams

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
)

// Team is a group of people and the apps they own.
type Team struct {
	Name     string
	Members  []Member
	Channels []string // the default channels of its apps that name none
	// Scopes are where in Azure its apps may live, given on the Teams
	// page; ConfiguredScopes those given in FUSEBOX_TEAM_SCOPES, shown
	// there and changed only where they were set.
	Scopes, ConfiguredScopes []Scope
}

// AllScopes is every scope the team holds, stored and configured.
func (t Team) AllScopes() []Scope { return append(slices.Clone(t.Scopes), t.ConfiguredScopes...) }

// Member maps one identity to a role on the team's apps.
type Member struct {
	// Who is a claim value (a group's object id or name, an app role) or
	// "user:" and a local user's name.
	Who  string
	Role auth.Role
	// Configured members come from FUSEBOX_TEAM_MEMBERS: shown on the
	// page, changed only where they were set.
	Configured bool
}

// Limits of what a team holds, so a page of members is bounded.
const (
	MaxTeams   = 200
	MaxMembers = 200
	MaxWho     = auth.MaxClaimLen
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// ValidName says s may name a team: lower-case letters, digits and -, at
// most 40.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// UserPrefix marks a member who is a local user rather than a claim value.
const UserPrefix = "user:"

// Check says what is wrong with a team to save.
func (t Team) Check() map[string]string {
	problems := map[string]string{}
	if !ValidName(t.Name) {
		problems["name"] = "must be 1 to 40 lower-case letters, digits or -, such as billing"
	}
	if len(t.Scopes) > MaxScopes {
		problems["scopes"] = fmt.Sprintf("at most %d scopes", MaxScopes)
	}
	if len(t.Members) > MaxMembers {
		problems["members"] = fmt.Sprintf("at most %d members", MaxMembers)
	}
	seen := map[string]bool{}
	for i, m := range t.Members {
		switch {
		case strings.TrimSpace(m.Who) == "" || len(m.Who) > MaxWho || strings.ContainsAny(m.Who, "\r\n\t"):
			problems["members"] = fmt.Sprintf("member %d: a claim value or user:NAME of 1 to %d characters on one line", i+1, MaxWho)
		case m.Role != auth.RoleViewer && m.Role != auth.RoleOperator:
			problems["members"] = fmt.Sprintf("member %d (%s): the role must be viewer or operator", i+1, m.Who)
		case seen[m.Who]:
			problems["members"] = fmt.Sprintf("member %d (%s) is listed twice", i+1, m.Who)
		}
		seen[m.Who] = true
	}
	return problems
}

// ParseMembers reads the page's members box: one "ROLE WHO" a line, such
// as "operator 6a1f…" or "viewer user:victor".
func ParseMembers(text string) ([]Member, error) {
	var out []Member
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		roleText, who, ok := strings.Cut(line, " ")
		role, err := auth.ParseRole(roleText)
		if !ok || err != nil || (role != auth.RoleViewer && role != auth.RoleOperator) {
			return nil, fmt.Errorf("line %d must be a role (viewer or operator), a space and who: a group's id or name, or user:NAME", i+1)
		}
		out = append(out, Member{Who: strings.TrimSpace(who), Role: role})
	}
	return out, nil
}

// FormatMembers writes members as ParseMembers reads them; configured
// ones are left out (they are not the page's to change).
func FormatMembers(ms []Member) string {
	var b strings.Builder
	for _, m := range ms {
		if !m.Configured {
			fmt.Fprintf(&b, "%s %s\n", m.Role, m.Who)
		}
	}
	return b.String()
}

// ErrNoTeam is a team that is not defined.
var ErrNoTeam = errors.New("no such team")

// TTL bounds how long a change on another instance takes to apply here.
const TTL = 10 * time.Second

// Directory is every team, stored and configured, read at most every TTL
// (one read, shared, whoever asks).
type Directory struct {
	List       func(ctx context.Context) ([]Team, error)
	Configured []Team // from FUSEBOX_TEAM_MEMBERS
	Now        func() time.Time

	flight singleflight.Group
	mu     sync.Mutex
	read   time.Time
	teams  []Team
}

// All is every team, sorted by name: stored ones with the configured
// members of the same name merged in, then those only configured.
func (d *Directory) All(ctx context.Context) ([]Team, error) {
	now := d.Now()
	d.mu.Lock()
	if d.teams != nil && now.Sub(d.read) < TTL && !now.Before(d.read) {
		ts := d.teams
		d.mu.Unlock()
		return ts, nil
	}
	d.mu.Unlock()
	v, err, _ := d.flight.Do("list", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		stored, err := d.List(ctx)
		if err != nil {
			return nil, err
		}
		ts := merge(stored, d.Configured)
		d.mu.Lock()
		d.teams, d.read = ts, now
		d.mu.Unlock()
		return ts, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]Team), nil
}

func merge(stored, configured []Team) []Team {
	byName := map[string]int{}
	out := make([]Team, 0, len(stored)+len(configured))
	for _, t := range stored {
		byName[t.Name] = len(out)
		t.Members = slices.Clone(t.Members)
		t.ConfiguredScopes = nil
		out = append(out, t)
	}
	for _, c := range configured {
		i, ok := byName[c.Name]
		if !ok {
			byName[c.Name] = len(out)
			out = append(out, Team{Name: c.Name})
			i = len(out) - 1
		}
		for _, m := range c.Members {
			m.Configured = true
			out[i].Members = append(out[i].Members, m)
		}
		out[i].ConfiguredScopes = append(out[i].ConfiguredScopes, c.ConfiguredScopes...)
	}
	slices.SortFunc(out, func(a, b Team) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Find is the team named name.
func Find(ts []Team, name string) (Team, bool) {
	i := slices.IndexFunc(ts, func(t Team) bool { return t.Name == name })
	if i < 0 {
		return Team{}, false
	}
	return ts[i], true
}

// Forget drops what was read, after a change on this instance.
func (d *Directory) Forget() {
	d.mu.Lock()
	d.teams = nil
	d.mu.Unlock()
}

// Apply adds to p the roles its claims and, for a local user, its name
// hold as a member of any team. Roles p already holds on a team (a local
// user's configured ones) are kept when higher.
func Apply(ts []Team, p auth.Principal) auth.Principal {
	who := map[string]bool{}
	for _, c := range p.Claims {
		if !strings.HasPrefix(c, UserPrefix) { // a provider's value never names a local user
			who[c] = true
		}
	}
	if p.Provider == "local" {
		who[UserPrefix+p.Name] = true
	}
	teams := make(map[string]auth.Role, len(p.Teams))
	for t, r := range p.Teams {
		teams[t] = r
	}
	for _, t := range ts {
		for _, m := range t.Members {
			if who[m.Who] {
				teams[t.Name] = max(teams[t.Name], m.Role)
			}
		}
	}
	p.Teams = teams
	return p
}

// ParseGrants reads a local user's roles as FUSEBOX_LOCAL_USERS gives
// them: "admin", "viewer" or "operator" on every app, or roles on teams'
// apps, such as "operator@billing" or "viewer@orders+operator@billing".
func ParseGrants(spec string) (auth.Role, map[string]auth.Role, error) {
	if !strings.Contains(spec, "@") {
		role, err := auth.ParseRole(spec)
		if err != nil || role == auth.RoleNone {
			return auth.RoleNone, nil, fmt.Errorf("the role must be admin, viewer or operator, or ROLE@TEAM joined by +, got %q", spec)
		}
		return role, nil, nil
	}
	on := map[string]auth.Role{}
	for part := range strings.SplitSeq(spec, "+") {
		roleText, team, _ := strings.Cut(part, "@")
		role, err := auth.ParseRole(roleText)
		switch {
		case err != nil || (role != auth.RoleViewer && role != auth.RoleOperator):
			return auth.RoleNone, nil, fmt.Errorf("%q: a role on a team is viewer or operator", part)
		case !ValidName(team):
			return auth.RoleNone, nil, fmt.Errorf("%q: %q is not a team's name (lower-case letters, digits, -)", part, team)
		}
		on[team] = max(on[team], role)
	}
	return auth.RoleNone, on, nil
}

// FormatMembersLine says members on one line, for the audit log.
func FormatMembersLine(ms []Member) string {
	if len(ms) == 0 {
		return "no members"
	}
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		parts = append(parts, m.Role.String()+" "+m.Who)
	}
	return strings.Join(parts, ", ")
}

// DefaultChannels gives each app that names no channel its team's default
// channels, for the notices of its circuits and jobs.
func DefaultChannels(apps []circuit.App, ts []Team) []circuit.App {
	out := slices.Clone(apps)
	for i, a := range out {
		if len(a.Channels) > 0 || a.Team == "" {
			continue
		}
		if t, ok := Find(ts, a.Team); ok && len(t.Channels) > 0 {
			out[i].Channels = slices.Clone(t.Channels)
		}
	}
	return out
}
