package access

import "strings"

// A team's names are its own. Apps, channels and downstreams are named
// by the people who make them, in one namespace each; were names shared,
// "that name is taken" would tell another team's operator what that team
// has. So a name a non-admin chooses for something of a team is qualified
// by the team, "billing.sql": a name can only be taken by the team's own
// things. An admin, who sees every name, names as given. Names made
// before this rule keep their plain form.

// Name is the name something new of team gets when the principal chose
// name: qualified by the team unless the principal is an admin, the
// thing is of no team, or the name already carries the team.
func (sc Scope) Name(team, name string) string {
	if sc.Admin() || team == "" || strings.HasPrefix(name, team+".") {
		return name
	}
	return team + "." + name
}

// NameProblem says what is wrong with name for something new of team,
// or "": a name with a dot names its team, so its prefix must be the
// thing's own team (one of no team has no dot).
func NameProblem(team, name string) string {
	prefix, _, dotted := strings.Cut(name, ".")
	switch {
	case !dotted:
		return ""
	case team == "":
		return "a name with a dot names a team: something shared between teams has none"
	case prefix != team:
		return "a name with a dot begins with its team: " + team + "." + name[len(prefix)+1:]
	}
	return ""
}
