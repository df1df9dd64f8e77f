package azalerts

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// Verifier checks the bearer token an action group's secure webhook sends:
// a Microsoft Entra ID access token for Fusebox's app registration, its
// signature against the tenant's published keys, its issuer, audience,
// tenant, life and (when set) the app role the action group was given.
type Verifier struct {
	Issuer   string // such as https://sts.windows.net/<tenant>/ (v1 tokens) or …/v2.0
	Audience string // the app registration's application id URI or client id
	Tenant   string // the token's tid
	Role     string // an app role the token must carry; empty: none checked
	KeysURL  string // the tenant's JWKS, such as https://login.microsoftonline.com/<tenant>/discovery/v2.0/keys
	Client   *http.Client
	Now      func() time.Time

	mu      sync.Mutex
	keys    []crypto.PublicKey
	fetched time.Time
}

// Errors of a token that does not verify.
var (
	ErrNoToken  = errors.New("azalerts: no bearer token")
	ErrBadToken = errors.New("azalerts: the token does not verify")
)

// Bounds of the key fetch: a token naming a key not held fetches the keys
// again at most this often, whoever sends it, so forged tokens cost no
// outbound call each; an answer is read to at most maxKeys bytes.
const (
	KeysRefresh = time.Minute
	maxKeys     = 64 << 10
	maxToken    = 16 << 10
)

// Verify checks the Authorization header's bearer token.
func (v *Verifier) Verify(ctx context.Context, header string) error {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return ErrNoToken
	}
	if len(raw) > maxToken {
		return ErrBadToken
	}
	keys, err := v.keySet(ctx, false)
	if err != nil {
		return err
	}
	tok, err := v.verifier(keys).Verify(ctx, raw)
	if err != nil {
		// A key rotated at Entra: fetched again, at most every KeysRefresh.
		if keys, err = v.keySet(ctx, true); err != nil {
			return err
		}
		if tok, err = v.verifier(keys).Verify(ctx, raw); err != nil {
			return ErrBadToken
		}
	}
	var claims struct {
		Tenant string   `json:"tid"`
		Roles  []string `json:"roles"`
	}
	if err := tok.Claims(&claims); err != nil || claims.Tenant != v.Tenant || (v.Role != "" && !slices.Contains(claims.Roles, v.Role)) {
		return ErrBadToken
	}
	return nil
}

func (v *Verifier) verifier(keys []crypto.PublicKey) *oidc.IDTokenVerifier {
	return oidc.NewVerifier(v.Issuer, &oidc.StaticKeySet{PublicKeys: keys}, &oidc.Config{ClientID: v.Audience, Now: v.Now,
		SupportedSigningAlgs: []string{oidc.RS256}})
}

// keySet is the keys as last fetched; fetched again when there are none,
// or when again is asked and the last fetch is KeysRefresh old.
func (v *Verifier) keySet(ctx context.Context, again bool) ([]crypto.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.Now()
	if v.keys != nil && (!again || now.Sub(v.fetched) < KeysRefresh) {
		return v.keys, nil
	}
	if v.keys == nil && !v.fetched.IsZero() && now.Sub(v.fetched) < KeysRefresh {
		return nil, errors.New("azalerts: the tenant's keys could not be read; tried again within a minute")
	}
	v.fetched = now
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.KeysURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("azalerts: read the tenant's keys: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeys+1))
	if err != nil || resp.StatusCode != http.StatusOK || len(body) > maxKeys {
		return nil, fmt.Errorf("azalerts: read the tenant's keys: answered %d", resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, errors.New("azalerts: the tenant's keys do not read")
	}
	var keys []crypto.PublicKey
	for _, k := range set.Keys {
		if k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			keys = append(keys, k.Key)
		}
		if len(keys) == 32 {
			break
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("azalerts: the tenant publishes no signing key")
	}
	v.keys = keys
	return keys, nil
}
