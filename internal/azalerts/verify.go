package azalerts

import (
	"cmp"
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
	"golang.org/x/sync/singleflight"
)

// Verifier checks the bearer token an action group's secure webhook sends:
// a Microsoft Entra ID access token for Fusebox's app registration, its
// signature against the tenant's published keys, its issuer, audience,
// tenant, life, and who sent it: the app role the action group's service
// principal was given, the application it is (AppID), or both. A token of
// the tenant for the audience is not enough on its own: any service
// principal of the tenant can ask for one, so a Verifier with neither Role
// nor AppID takes no token at all.
type Verifier struct {
	Issuer   string // such as https://sts.windows.net/<tenant>/ (v1 tokens) or …/v2.0
	Audience string // the app registration's application id URI or client id
	Tenant   string // the token's tid
	Role     string // an app role the token must carry; empty: none checked
	// AppID is the caller's application id the token must name (appid in
	// v1 tokens, azp in v2), such as ActionGroupsAppID; empty: none checked.
	AppID   string
	KeysURL string // the tenant's JWKS, such as https://login.microsoftonline.com/<tenant>/discovery/v2.0/keys
	Client  *http.Client
	Now     func() time.Time

	// flight joins the callers that need the keys at once to one fetch,
	// made on a context of its own: a caller that goes away stops waiting,
	// not the fetch the others wait for.
	flight singleflight.Group

	mu      sync.Mutex
	keys    []crypto.PublicKey
	fetched time.Time
}

// ActionGroupsAppID is the application Azure Monitor's action groups
// send secure webhooks as ("AzNS AAD Webhook"), as Microsoft's action
// group documentation names it.
const ActionGroupsAppID = "461e8683-5575-4561-ac7f-899cc907d62a"

// Errors of a token that does not verify.
var (
	ErrNoToken  = errors.New("azalerts: no bearer token")
	ErrBadToken = errors.New("azalerts: the token does not verify")
)

// Bounds of the key fetch: a token naming a key not held fetches the keys
// again at most this often, whoever sends it, so forged tokens cost no
// outbound call each; a fetch takes at most KeysTimeout; an answer is read
// to at most maxKeys bytes.
const (
	KeysRefresh = time.Minute
	KeysTimeout = 10 * time.Second
	maxKeys     = 64 << 10
	maxToken    = 16 << 10
)

// Verify checks the Authorization header's bearer token. It returns
// ErrNoToken or ErrBadToken for a token that is not one to take, ctx's
// error when ctx ends while the keys are fetched, and another error when
// the tenant's keys cannot be read.
func (v *Verifier) Verify(ctx context.Context, header string) error {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return ErrNoToken
	}
	if len(raw) > maxToken || (v.Role == "" && v.AppID == "") {
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
		AppID  string   `json:"appid"` // v1 tokens
		AZP    string   `json:"azp"`   // v2 tokens
	}
	if err := tok.Claims(&claims); err != nil || claims.Tenant != v.Tenant {
		return ErrBadToken
	}
	if v.Role != "" && !slices.Contains(claims.Roles, v.Role) {
		return ErrBadToken
	}
	if v.AppID != "" && !strings.EqualFold(cmp.Or(claims.AppID, claims.AZP), v.AppID) {
		return ErrBadToken
	}
	return nil
}

func (v *Verifier) verifier(keys []crypto.PublicKey) *oidc.IDTokenVerifier {
	return oidc.NewVerifier(v.Issuer, &oidc.StaticKeySet{PublicKeys: keys}, &oidc.Config{ClientID: v.Audience, Now: v.Now,
		SupportedSigningAlgs: []string{oidc.RS256}})
}

// keySet is the keys as last fetched; fetched again when there are none,
// or when again is asked and the last fetch is KeysRefresh old. Callers
// that need a fetch at once share one, and each stops waiting when its
// own ctx ends; the fetch does not (it ends after KeysTimeout), so one
// sender that goes away costs the others nothing.
func (v *Verifier) keySet(ctx context.Context, again bool) ([]crypto.PublicKey, error) {
	keys, seen, fetch, err := v.held(again)
	if !fetch {
		return keys, err
	}
	ch := v.flight.DoChan("keys", func() (any, error) {
		v.mu.Lock()
		if !v.fetched.Equal(seen) {
			// Fetched since this caller looked: that fetch is the answer.
			keys := v.keys
			v.mu.Unlock()
			if keys == nil {
				return nil, errKeysLately
			}
			return keys, nil
		}
		v.mu.Unlock()
		// fetched is set when the fetch ends: until then, whoever needs
		// the keys finds them wanting and joins this flight.
		start := v.Now()
		keys, err := v.fetch(context.WithoutCancel(ctx))
		v.mu.Lock()
		defer v.mu.Unlock()
		v.fetched = start
		if err != nil {
			return nil, err
		}
		v.keys = keys
		return keys, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]crypto.PublicKey), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var errKeysLately = errors.New("azalerts: the tenant's keys could not be read; tried again within a minute")

// held is the keys held when they serve, or the error of a fetch that
// failed within KeysRefresh; fetch says neither serves, and seen is when
// the keys were last fetched.
func (v *Verifier) held(again bool) (keys []crypto.PublicKey, seen time.Time, fetch bool, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	recent := !v.fetched.IsZero() && v.Now().Sub(v.fetched) < KeysRefresh
	switch {
	case v.keys != nil && (!again || recent):
		return v.keys, v.fetched, false, nil
	case v.keys == nil && recent:
		return nil, v.fetched, false, errKeysLately
	}
	return nil, v.fetched, true, nil
}

// fetch reads the tenant's signing keys, within KeysTimeout.
func (v *Verifier) fetch(ctx context.Context) ([]crypto.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, KeysTimeout)
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
	return keys, nil
}
