package web

import (
	"context"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/teams"
)

// TeamPages are the admins' Teams page and API: teams, their members,
// Azure scopes, apps and default channels; and who a token is (/me).
type TeamPages struct {
	*core
	Apps      appReader
	TeamStore teamStore
	AppTeams  appTeamSetter
	Channels  channelChecker
	Audit     auditLog
}

// TokenPages issue, list and revoke the API tokens people issue.
type TokenPages struct {
	*core
	Tokens tokenStore
	// Issued verifies the tokens and forgets its list when one is issued
	// or revoked here.
	Issued *auth.Issued
	Audit  auditLog
}

type (
	// teamStore keeps the teams defined on the Teams page.
	teamStore interface {
		Put(ctx context.Context, t teams.Team) error
		Delete(ctx context.Context, name string) error
	}
	// appTeamSetter moves apps between teams.
	appTeamSetter interface {
		SetTeam(ctx context.Context, id, team string) error
	}
)
