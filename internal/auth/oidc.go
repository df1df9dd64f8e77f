package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDCSettings configure sign-in through an OpenID Connect provider.
type OIDCSettings struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	RedirectURL  string // Fusebox's callback, e.g. https://fusebox.example.com/auth/oidc/callback
	Scopes       []string
	Roles        RoleMapper
	// HTTPClient talks to the provider; nil means a client with a timeout.
	HTTPClient *http.Client
	// StateKey signs the short-lived cookie that carries state, nonce and
	// PKCE verifier across the round trip to the provider.
	StateKey []byte
	Now      func() time.Time
}

// OIDC runs the authorization code flow with PKCE and nonce.
type OIDC struct {
	settings OIDCSettings
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	signer   signer
	client   *http.Client
}

// NewOIDC discovers the provider. A wrong issuer fails here, at start-up,
// rather than on the first person's sign-in.
func NewOIDC(ctx context.Context, s OIDCSettings) (*OIDC, error) {
	if s.HTTPClient == nil {
		s.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	if len(s.StateKey) < 32 {
		return nil, errors.New("auth: the OIDC state key must be at least 32 bytes")
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, s.HTTPClient), s.Issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: OpenID Connect discovery at %s failed (check FUSEBOX_OIDC_ISSUER): %w", s.Issuer, err)
	}
	scopes := s.Scopes
	if len(scopes) == 0 {
		scopes = []string{oidc.ScopeOpenID, "profile", "email"}
	}
	return &OIDC{
		settings: s,
		oauth: oauth2.Config{
			ClientID: s.ClientID, ClientSecret: s.ClientSecret, RedirectURL: s.RedirectURL,
			Endpoint: provider.Endpoint(), Scopes: scopes,
		},
		verifier: provider.Verifier(&oidc.Config{ClientID: s.ClientID, Now: s.Now}),
		signer:   signer{key: s.StateKey},
		client:   s.HTTPClient,
	}, nil
}

// flow is what the browser carries, signed, between Begin and Finish.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"r"`
	Expires  int64  `json:"e"`
}

const flowPurpose = "fusebox-oidc-flow"

// FlowLifetime bounds how long a person may take at the provider.
const FlowLifetime = 10 * time.Minute

// Begin returns the provider URL to send the browser to and the value of
// the flow cookie to set. next is where to land after signing in.
func (o *OIDC) Begin(next string) (authURL, flowCookie string) {
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: next,
		Expires: o.settings.Now().Add(FlowLifetime).Unix()}
	data, _ := json.Marshal(f)
	cookie := o.signer.sign(flowPurpose, base64.RawURLEncoding.EncodeToString(data))
	authURL = o.oauth.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return authURL, cookie
}

// ErrFlow is a callback that does not belong to a sign-in this browser began.
var ErrFlow = errors.New("the sign-in attempt expired or did not start here; please sign in again")

// Finish checks the provider's callback against the flow cookie, exchanges
// the code and verifies the ID token. It returns the principal and where
// the person wanted to go.
func (o *OIDC) Finish(ctx context.Context, flowCookie, state, code string) (Principal, string, error) {
	encoded, ok := o.signer.verify(flowPurpose, flowCookie)
	if !ok {
		return Principal{}, "", ErrFlow
	}
	data, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return Principal{}, "", ErrFlow
	}
	var f flow
	if err := json.Unmarshal(data, &f); err != nil || f.State == "" || state != f.State || o.settings.Now().Unix() > f.Expires {
		return Principal{}, "", ErrFlow
	}
	if code == "" {
		return Principal{}, "", ErrFlow
	}
	ctx = oidc.ClientContext(ctx, o.client)
	tok, err := o.oauth.Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return Principal{}, "", fmt.Errorf("auth: the provider refused the sign-in code (check FUSEBOX_OIDC_CLIENT_SECRET): %w", err)
	}
	rawID, ok := tok.Extra("id_token").(string)
	if !ok {
		return Principal{}, "", errors.New("auth: the provider returned no ID token")
	}
	idToken, err := o.verifier.Verify(ctx, rawID)
	if err != nil {
		return Principal{}, "", fmt.Errorf("auth: the ID token is not valid: %w", err)
	}
	if idToken.Nonce != f.Nonce {
		return Principal{}, "", errors.New("auth: the ID token was not issued for this sign-in (nonce mismatch)")
	}
	var claims map[string]any
	if err := idToken.Claims(&claims); err != nil {
		return Principal{}, "", fmt.Errorf("auth: read ID token claims: %w", err)
	}
	str := func(k string) string { s, _ := claims[k].(string); return s }
	p := Principal{Subject: idToken.Subject, Email: str("email"), Provider: "oidc"}
	for _, k := range []string{"name", "preferred_username", "email"} {
		if p.Name = str(k); p.Name != "" {
			break
		}
	}
	if p.Name == "" {
		p.Name = idToken.Subject
	}
	// A person whose claims grant nothing still signs in: a team may
	// name their groups later, and the pages say why they are empty.
	values := claimValues(claims[o.settings.Roles.Claim])
	p.Role = o.settings.Roles.Map(values)
	if tc := o.settings.Roles.TeamClaim; tc != "" && tc != o.settings.Roles.Claim {
		values = append(values, claimValues(claims[tc])...)
	}
	p.Claims = keepClaims(values)
	return p, f.Next, nil
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
