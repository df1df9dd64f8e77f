package auth

// API tokens people issue on the Tokens page or through the API, beside
// the ones configured in the environment. Each is "fbt_<id>.<secret>":
// the id finds its row, the whole token's SHA-256 is all that is stored,
// and it is compared in constant time.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"
)

// IssuedToken is an API token a person issued.
type IssuedToken struct {
	ID   string
	Name string
	Role Role
	// Team limits the token to one team's apps, at Role (viewer or
	// operator); empty: Role on every app (an admin's token).
	Team      string
	CreatedBy string
	CreatedAt time.Time
	Expires   time.Time // always set: an issued token ends
	Revoked   time.Time // zero: not revoked
	LastUsed  time.Time // zero: never; written at most once a minute
	Hash      string    // hex SHA-256 of the whole token
}

// Active says t is neither revoked nor expired at now.
func (t IssuedToken) Active(now time.Time) bool {
	return t.Revoked.IsZero() && now.Before(t.Expires)
}

// State says where t stands at now, for the page: active, revoked or
// expired.
func (t IssuedToken) State(now time.Time) string {
	switch {
	case !t.Revoked.IsZero():
		return "revoked"
	case !now.Before(t.Expires):
		return "expired"
	}
	return "active"
}

// Limits of issued tokens.
const (
	MaxTokenName   = 64
	MaxTokenLife   = 365 * 24 * time.Hour
	MaxIssued      = 1000 // rows read when the list is refreshed
	IssuedTokenTTL = 10 * time.Second
)

// NewIssuedToken makes a token: its id, the token to show once, and the
// hash to store.
func NewIssuedToken() (id, token, hash string) {
	idb, secret := make([]byte, 8), make([]byte, 32)
	_, _ = rand.Read(idb)
	_, _ = rand.Read(secret)
	id = hex.EncodeToString(idb)
	token = "fbt_" + id + "." + base64.RawURLEncoding.EncodeToString(secret)
	return id, token, hashOf(token)
}

func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// IssuedID is the id an issued token names, and false for anything else
// (a configured token has no dot: base64url has none).
func IssuedID(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, "fbt_")
	if !ok {
		return "", false
	}
	id, secret, ok := strings.Cut(rest, ".")
	if !ok || len(id) != 16 || secret == "" {
		return "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", false
	}
	return id, true
}

// CheckIssue says what is wrong with a token to issue by someone holding
// role whose own credential ends at until (zero: it does not end).
func CheckIssue(name string, role, issuer Role, life time.Duration, now, until time.Time) map[string]string {
	problems := map[string]string{}
	switch {
	case strings.TrimSpace(name) == "" || len(name) > MaxTokenName || !utf8.ValidString(name) || strings.ContainsAny(name, "\r\n\t"):
		problems["name"] = fmt.Sprintf("must be 1 to %d characters on one line, such as ci-deploy", MaxTokenName)
	}
	switch {
	case role == RoleNone:
		problems["role"] = "must be viewer or operator"
	case !issuer.Allows(role):
		problems["role"] = fmt.Sprintf("you hold the %s role: a token you issue cannot do more", issuer)
	}
	switch {
	case life <= 0 || life > MaxTokenLife:
		problems["expires_in_days"] = "must be 1 to 365 days"
	case !until.IsZero() && now.Add(life).After(until):
		problems["expires_in_days"] = "must end before the token you issue it with does"
	}
	return problems
}

// Issued verifies issued tokens against the whole list, read at most
// every IssuedTokenTTL (one read, shared, whatever a request names), so a
// token revoked on another instance is refused here within that, and a
// made-up id costs no storage read.
type Issued struct {
	List func(ctx context.Context) ([]IssuedToken, error)
	// Touch records a token's use; called at most once a minute a token.
	Touch func(ctx context.Context, id string, at time.Time) error
	Now   func() time.Time

	flight singleflight.Group
	mu     sync.Mutex
	read   time.Time
	byID   map[string]IssuedToken // the list as last read, at most MaxIssued
	// used is when each token's use was last recorded here: only tokens
	// that verified, and only those still listed (at most MaxIssued).
	used map[string]time.Time
}

// Principal returns who an issued token belongs to, and false when it is
// not one, not known, revoked or expired. An error is storage failing.
func (i *Issued) Principal(ctx context.Context, token string) (Principal, bool, error) {
	id, ok := IssuedID(token)
	if !ok {
		return Principal{}, false, nil
	}
	now := i.Now()
	tokens, err := i.current(ctx, now)
	if err != nil {
		return Principal{}, false, err
	}
	t, ok := tokens[id]
	// Compared whether found or not, so timing says nothing of the ids.
	match := subtle.ConstantTimeCompare([]byte(hashOf(token)), []byte(t.Hash)) == 1
	if !ok || !match || !t.Active(now) {
		return Principal{}, false, nil
	}
	i.touch(ctx, t, now)
	p := Principal{Subject: "token:" + t.ID, Name: t.Name, Role: t.Role, Provider: "token", Until: t.Expires}
	if t.Team != "" {
		p.Role, p.Teams = RoleNone, map[string]Role{t.Team: min(t.Role, RoleOperator)}
	}
	return p, true, nil
}

// current is the list as read at most IssuedTokenTTL ago.
func (i *Issued) current(ctx context.Context, now time.Time) (map[string]IssuedToken, error) {
	i.mu.Lock()
	if i.byID != nil && now.Sub(i.read) < IssuedTokenTTL && !now.Before(i.read) {
		m := i.byID
		i.mu.Unlock()
		return m, nil
	}
	i.mu.Unlock()
	v, err, _ := i.flight.Do("list", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		list, err := i.List(ctx)
		if err != nil {
			return nil, err
		}
		m := make(map[string]IssuedToken, len(list))
		for _, t := range list {
			m[t.ID] = t
		}
		i.mu.Lock()
		i.byID, i.read = m, now
		for id := range i.used { // only listed tokens are remembered: at most MaxIssued
			if _, ok := m[id]; !ok {
				delete(i.used, id)
			}
		}
		i.mu.Unlock()
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string]IssuedToken), nil
}

// touch records t's use when it was last recorded a minute ago or more.
func (i *Issued) touch(ctx context.Context, t IssuedToken, now time.Time) {
	i.mu.Lock()
	if i.used == nil {
		i.used = map[string]time.Time{}
	}
	last := i.used[t.ID]
	if t.LastUsed.After(last) {
		last = t.LastUsed
	}
	due := now.Sub(last) >= time.Minute
	if due {
		i.used[t.ID] = now
	}
	i.mu.Unlock()
	if due && i.Touch != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = i.Touch(ctx, t.ID, now) // best effort: the page shows the last one written
	}
}

// Forget drops the list, after a change on this instance.
func (i *Issued) Forget() {
	i.mu.Lock()
	i.byID = nil
	i.mu.Unlock()
}
