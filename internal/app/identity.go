package app

import (
	"context"
	"errors"
	"slices"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/internal/web"
)

// identities are the ways people and tokens sign in: sessions with CSRF,
// local users, OpenID Connect, App Service's Easy Auth and API tokens.
func identities(ctx context.Context, cfg *config.Config, o Options, store *storage.Store) (web.Identity, error) {
	now := o.Clock.Now
	key := []byte(cfg.Session.Key.Reveal())
	sessions, err := auth.NewSessions(store.Sessions, auth.DeriveKey(key, auth.PurposeSessions), cfg.Session.TTL, now)
	if err != nil {
		return web.Identity{}, err
	}
	csrf, err := auth.NewCSRF(auth.DeriveKey(key, auth.PurposeCSRF))
	if err != nil {
		return web.Identity{}, err
	}
	users := make([]auth.LocalUser, 0, len(cfg.LocalUsers))
	for _, u := range cfg.LocalUsers {
		role, on, err := teams.ParseGrants(u.Role)
		if err != nil {
			return web.Identity{}, err
		}
		users = append(users, auth.LocalUser{Name: u.Name, Role: role, Teams: on, PasswordHash: []byte(u.PasswordHash.Reveal())})
	}
	tokens := make([]auth.APIToken, 0, len(cfg.APITokens))
	for _, t := range cfg.APITokens {
		role, err := auth.ParseRole(t.Role)
		if err != nil {
			return web.Identity{}, err
		}
		if role == auth.RoleOperator {
			role = auth.RoleAdmin // the environment's tokens bootstrap: an operator's is an admin's
		}
		tokens = append(tokens, auth.APIToken{Name: t.Name, Role: role, Hash: t.Hash.Reveal()})
	}
	roles := auth.NewRoleMapper(cfg.RoleClaim, cfg.AdminClaims, cfg.OperatorClaims, cfg.ViewerClaims)
	roles.TeamClaim = cfg.TeamClaim
	// Teams named in the environment, by FUSEBOX_TEAM_MEMBERS or a local
	// user's ROLE@TEAM, exist with those members (shown on the Teams page).
	var configured []teams.Team
	member := func(team, who string, role auth.Role) {
		i := slices.IndexFunc(configured, func(t teams.Team) bool { return t.Name == team })
		if i < 0 {
			configured, i = append(configured, teams.Team{Name: team}), len(configured)
		}
		configured[i].Members = append(configured[i].Members, teams.Member{Who: who, Role: role, Configured: true})
	}
	for _, m := range cfg.TeamMembers {
		role, _ := auth.ParseRole(m.Role)
		member(m.Team, m.Who, role)
	}
	for _, sc := range cfg.TeamScopes {
		i := slices.IndexFunc(configured, func(t teams.Team) bool { return t.Name == sc.Team })
		if i < 0 {
			configured, i = append(configured, teams.Team{Name: sc.Team}), len(configured)
		}
		configured[i].ConfiguredScopes = append(configured[i].ConfiguredScopes, sc.Scope)
	}
	for _, u := range users {
		for team, role := range u.Teams {
			member(team, teams.UserPrefix+u.Name, role)
		}
	}
	var oidc *auth.OIDC
	if cfg.OIDC != nil {
		oidc, err = auth.NewOIDC(ctx, auth.OIDCSettings{
			Issuer: cfg.OIDC.Issuer, ClientID: cfg.OIDC.ClientID, ClientSecret: cfg.OIDC.ClientSecret.Reveal(),
			RedirectURL: cfg.BaseURL.JoinPath("/auth/oidc/callback").String(), Scopes: cfg.OIDC.Scopes,
			Roles: roles, HTTPClient: o.OIDCClient, StateKey: auth.DeriveKey(key, auth.PurposeOIDCState), Now: now,
		})
		if err != nil {
			return web.Identity{}, err
		}
	}
	var easy *auth.EasyAuth
	if cfg.EasyAuth {
		easy = auth.NewEasyAuth(roles)
	}
	return web.Identity{Sessions: sessions, CSRF: csrf, Local: auth.NewLocalUsers(users), OIDC: oidc, EasyAuth: easy,
		Tokens: auth.NewAPITokens(tokens), Issued: &auth.Issued{List: store.Tokens.List, Touch: store.Tokens.Touch, Now: now},
		Teams: &teams.Directory{List: store.Teams.List, Configured: configured, Now: now},
		Policy: &access.Policy{Read: access.Readers{Apps: store.Apps.List, App: store.Apps.Get, Job: store.Jobs.Get, Channel: store.Channels.Get, Windows: store.Jobs.Windows, Tokens: store.Tokens.List, Downstream: store.Downstreams.Get, Downstreams: store.Downstreams.List,
			Channels: store.Channels.ListChannels, Jobs: store.Jobs.List}}}, nil
}

// appKeys verify apps' report keys against the hashes the apps table keeps.
func appKeys(store *storage.Store) *auth.AppKeys {
	return &auth.AppKeys{Hash: func(ctx context.Context, appID string) (string, error) {
		app, err := store.Apps.Get(ctx, appID)
		if errors.Is(err, storage.ErrNoApp) {
			return "", auth.ErrNoSuchApp
		}
		return app.APIKeyHash, err
	}}
}
