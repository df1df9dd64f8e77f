// Package oidctest runs a small OpenID Connect provider in-process for
// tests. It speaks the real protocol over HTTP: discovery, the
// authorization endpoint, the token endpoint with client authentication
// and PKCE (S256), and RS256-signed ID tokens published through JWKS.
// Fusebox's code under test talks to it exactly as it would to Entra ID.
//
// The provider signs in whichever user the test set with SetUser, without
// showing a login form: the protocol round trip is what is under test.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// User is who the provider signs in, with any extra claims (roles, groups).
type User struct {
	Subject string
	Name    string
	Email   string
	Claims  map[string]any
}

// Provider is a running OpenID Connect provider.
type Provider struct {
	URL          string // the issuer
	ClientID     string
	ClientSecret string

	server *httptest.Server
	key    *rsa.PrivateKey
	signer jose.Signer
	now    func() time.Time

	mu          sync.Mutex
	user        User
	redirectURI string
	codes       map[string]grant
	// TokenRequests counts calls to the token endpoint, KeyRequests
	// those to the JWKS.
	TokenRequests int
	KeyRequests   int
}

type grant struct {
	user        User
	nonce       string
	challenge   string
	redirectURI string
}

// Start runs a provider until the test ends. redirectURI is the only
// callback it accepts; now is the clock for token times.
func Start(t testing.TB, redirectURI string, now func() time.Time) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "test-key"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: "fusebox-test", ClientSecret: "s3cret-for-tests", key: key, signer: signer, now: now,
		redirectURI: redirectURI, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /jwks", p.jwks)
	p.server = httptest.NewServer(mux)
	p.URL = p.server.URL
	t.Cleanup(p.server.Close)
	return p
}

// SetUser chooses who the next sign-in is.
func (p *Provider) SetUser(u User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user = u
}

// SetRedirectURI changes the registered callback (when the test learns
// Fusebox's address only after starting the provider).
func (p *Provider) SetRedirectURI(uri string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redirectURI = uri
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.URL,
		"authorization_endpoint":                p.URL + "/authorize",
		"token_endpoint":                        p.URL + "/token",
		"jwks_uri":                              p.URL + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

// Mint signs claims as the provider's tokens are signed, for a token a
// service would be sent (an action group's secure webhook's).
func (p *Provider) Mint(claims map[string]any) string {
	tok, err := jwt.Signed(p.signer).Claims(claims).Serialize()
	if err != nil {
		panic(err) // claims that do not encode are the test's own mistake
	}
	return tok
}

// Keys counts the JWKS requests so far.
func (p *Provider) Keys() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.KeyRequests
}

func (p *Provider) jwks(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.KeyRequests++
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "test-key", Algorithm: "RS256", Use: "sig"}}})
}

func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case q.Get("client_id") != p.ClientID:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case q.Get("redirect_uri") != p.redirectURI:
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "this provider requires the code flow with PKCE S256", http.StatusBadRequest)
		return
	}
	code := randomString()
	p.codes[code] = grant{user: p.user, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.TokenRequests++
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	code := r.PostFormValue("code")
	g, found := p.codes[code]
	delete(p.codes, code) // codes are single-use
	sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
	switch {
	case r.PostFormValue("grant_type") != "authorization_code", !found:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	case r.PostFormValue("redirect_uri") != g.redirectURI:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "redirect_uri mismatch"})
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
		return
	}
	now := p.now()
	claims := map[string]any{
		"iss": p.URL, "sub": g.user.Subject, "aud": p.ClientID, "nonce": g.nonce,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "name": g.user.Name, "email": g.user.Email,
	}
	for k, v := range g.user.Claims {
		claims[k] = v
	}
	idToken, err := jwt.Signed(p.signer).Claims(claims).Serialize()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": randomString(), "token_type": "Bearer", "expires_in": 3600, "id_token": idToken})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomString() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
