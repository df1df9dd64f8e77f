package app

import (
	"context"
	"errors"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/storage"
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
		role, err := auth.ParseRole(u.Role)
		if err != nil {
			return web.Identity{}, err
		}
		users = append(users, auth.LocalUser{Name: u.Name, Role: role, PasswordHash: []byte(u.PasswordHash.Reveal())})
	}
	tokens := make([]auth.APIToken, 0, len(cfg.APITokens))
	for _, t := range cfg.APITokens {
		role, err := auth.ParseRole(t.Role)
		if err != nil {
			return web.Identity{}, err
		}
		tokens = append(tokens, auth.APIToken{Name: t.Name, Role: role, Hash: t.Hash.Reveal()})
	}
	roles := auth.NewRoleMapper(cfg.RoleClaim, cfg.OperatorClaims, cfg.ViewerClaims)
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
		Tokens: auth.NewAPITokens(tokens), Issued: &auth.Issued{List: store.Tokens.List, Touch: store.Tokens.Touch, Now: now}}, nil
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
