package access

import (
	"context"
	"slices"
	"strings"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
)

// AuditRead is how many audit entries to read to show limit: five times
// as many for anyone who may not see them all.
func (sc Scope) AuditRead(limit int) int {
	if sc.Admin() {
		return limit
	}
	return 5 * limit
}

// AuditEntries keeps, up to limit, the entries whose subject the
// principal of ctx may see: by the team recorded when each was written
// (entries of no team are for roles held on every app; those of teams
// themselves, admins'). Entries from before teams were recorded are
// judged by their target: a circuit or app by its app's team, a channel,
// token or downstream by theirs; never a job by its name, which anyone
// may choose to look like another team's circuit. owners maps apps to
// their teams, read only when an old entry needs it.
func (pol *Policy) AuditEntries(ctx context.Context, owners func() (map[string]string, error), es []audit.Entry, limit int) ([]audit.Entry, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, ErrNoPrincipal
	}
	sc := For(p)
	if sc.Admin() {
		return es[:min(len(es), limit)], nil
	}
	if p.Role != auth.RoleNone {
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
	var apps map[string]string
	if legacy {
		var err error
		if apps, err = owners(); err != nil {
			return nil, err
		}
		chs, err := pol.Read.Channels(ctx)
		if err != nil {
			return nil, err
		}
		toks, err := pol.Read.Tokens(ctx)
		if err != nil {
			return nil, err
		}
		ds, err := pol.Read.Downstreams(ctx)
		if err != nil {
			return nil, err
		}
		for _, ch := range chs {
			seen["channel:"+ch.ID] = ch.Team != "" && sc.Sees(ch.Team)
		}
		for _, t := range toks {
			seen["token:"+t.ID] = t.Team != "" && sc.Sees(t.Team)
		}
		for _, d := range ds {
			seen["downstream:"+d.Name] = sc.SeesDownstream(d)
		}
	}
	out := make([]audit.Entry, 0, min(len(es), limit))
	for _, e := range es {
		var v bool
		switch {
		case e.Owned:
			v = e.Team != "" && sc.Sees(e.Team)
		default:
			var named bool
			v, named = seen[e.Target]
			if app, _, _ := strings.Cut(e.Target, "/"); !named {
				team, isApp := apps[app]
				v = isApp && team != "" && sc.Sees(team)
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
