package access

import (
	"context"
	"strings"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/jobs"
)

// Messages says which outbox messages the principal of ctx holds role
// on: those about a circuit or queue of an app, a job or a downstream
// whose team it holds role on; Fusebox's own jobs are admins'. Seeing
// takes viewer, resending operator. owners maps apps to their teams.
func (pol *Policy) Messages(ctx context.Context, owners map[string]string, role auth.Role) (func(alerts.Message) bool, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, ErrNoPrincipal
	}
	if p.Admin() {
		return func(alerts.Message) bool { return true }, nil
	}
	holds := func(team string) bool { return p.On(team).Allows(role) }
	js, err := pol.Read.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	jobHeld := make(map[string]bool, len(js))
	for _, j := range js {
		jobHeld[j.ID] = !jobs.InternalID(j.ID) && holds(JobTeam(owners, j))
	}
	ds, err := pol.Read.Downstreams(ctx)
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
