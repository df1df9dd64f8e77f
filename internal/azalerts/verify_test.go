package azalerts_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/fusebox/fusebox/internal/azalerts"
)

const (
	tenant   = "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	issuer   = "https://sts.windows.net/" + tenant + "/"
	audience = "api://fusebox-alerts"
	role     = "ActionGroupsSecureWebhook"
)

var now = time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)

// tenantKeys stands in for the tenant: it signs tokens and publishes its
// key.
type tenantKeys struct {
	key    *rsa.PrivateKey
	signer jose.Signer
}

func newTenantKeys(t *testing.T) tenantKeys {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	return tenantKeys{key: key, signer: signer}
}

func (k tenantKeys) jwks() []byte {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	return b
}

// token is a bearer header for an action group's token, changed by change.
func (k tenantKeys) token(t *testing.T, change func(map[string]any)) string {
	t.Helper()
	c := map[string]any{"iss": issuer, "aud": audience, "tid": tenant, "roles": []string{role}, "appid": azalerts.ActionGroupsAppID, "ver": "1.0",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if change != nil {
		change(c)
	}
	s, err := jwt.Signed(k.signer).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + s
}

// The tenant's keys are fetched on a context of their own, shared by
// whoever waits for them: the sender whose token started the fetch goes
// away while the tenant is slow to answer, and stops waiting at once; the
// fetch goes on, and the next sender's token verifies against what it
// read. One fetch served both.
func TestASenderThatGoesAwayMidFetchCostsNobodyElse(t *testing.T) {
	keys := newTenantKeys(t)
	asked := make(chan struct{}, 1)
	answer := make(chan struct{})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		asked <- struct{}{}
		select {
		case <-answer:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(keys.jwks())
	}))
	t.Cleanup(srv.Close)
	v := &azalerts.Verifier{Issuer: issuer, Audience: audience, Tenant: tenant, Role: role, KeysURL: srv.URL, Client: srv.Client(), Now: func() time.Time { return now }}
	token := keys.token(t, nil)

	ctx, gone := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() { first <- v.Verify(ctx, token) }()
	<-asked // the fetch is at the tenant
	gone()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("the sender that went away: %v, want its own context's end", err)
	}
	second := make(chan error, 1)
	go func() { second <- v.Verify(t.Context(), token) }()
	close(answer)
	if err := <-second; err != nil {
		t.Errorf("the next sender, after the first went away mid-fetch: %v, want its token verified", err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the keys were fetched %d times, want once", n)
	}
}

// A token of the tenant for the audience is not enough: the caller must
// hold the app role, be the pinned application (appid in v1 tokens, azp in
// v2), or both, as configured; a Verifier that pins neither takes nothing
// and fetches nothing.
func TestTheCallerMustBeTheActionGroupsByRoleOrApplication(t *testing.T) {
	keys := newTenantKeys(t)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(keys.jwks())
	}))
	t.Cleanup(srv.Close)
	const other = "0f0e0d0c-0b0a-0908-0706-050403020100"
	v2 := func(c map[string]any) { delete(c, "appid"); c["azp"] = azalerts.ActionGroupsAppID; c["ver"] = "2.0" }
	noRole := func(c map[string]any) { delete(c, "roles") }
	otherApp := func(c map[string]any) { c["appid"] = other }
	for _, tc := range []struct {
		name, role, app string
		change          func(map[string]any)
		want            error
	}{
		{"role pinned, held", role, "", nil, nil},
		{"role pinned, not held", role, "", noRole, azalerts.ErrBadToken},
		{"role pinned, another application holding it", role, "", otherApp, nil},
		{"application pinned, v1 appid", "", azalerts.ActionGroupsAppID, noRole, nil},
		{"application pinned, v2 azp", "", azalerts.ActionGroupsAppID, func(c map[string]any) { v2(c); noRole(c) }, nil},
		{"application pinned, another application", "", azalerts.ActionGroupsAppID, otherApp, azalerts.ErrBadToken},
		{"application pinned, none named", "", azalerts.ActionGroupsAppID, func(c map[string]any) { delete(c, "appid") }, azalerts.ErrBadToken},
		{"both pinned, both held", role, azalerts.ActionGroupsAppID, nil, nil},
		{"both pinned, the role missing", role, azalerts.ActionGroupsAppID, noRole, azalerts.ErrBadToken},
		{"both pinned, another application", role, azalerts.ActionGroupsAppID, otherApp, azalerts.ErrBadToken},
		{"neither pinned", "", "", nil, azalerts.ErrBadToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fetches.Load()
			v := &azalerts.Verifier{Issuer: issuer, Audience: audience, Tenant: tenant, Role: tc.role, AppID: tc.app, KeysURL: srv.URL,
				Client: srv.Client(), Now: func() time.Time { return now }}
			if err := v.Verify(t.Context(), keys.token(t, tc.change)); !errors.Is(err, tc.want) && (err != nil || tc.want != nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if tc.role == "" && tc.app == "" && fetches.Load() != before {
				t.Error("a verifier that pins no caller fetched the tenant's keys")
			}
		})
	}
}
