// Package auth decides who is using Fusebox and what they may do.
//
// People sign in through one of three doors, each off unless configured:
// local users with bcrypt password hashes, OpenID Connect (Entra ID or any
// compliant provider), and App Service Easy Auth's X-MS-CLIENT-PRINCIPAL
// header. Easy Auth is trusted only when explicitly enabled, because outside
// App Service anyone can send that header.
//
// A signed-in person gets a server-side session: the browser holds a random
// token, signed so forgeries are refused without a storage read, and the
// store holds only the token's SHA-256, so a leaked table is not a leaked
// login. Signing out deletes the session, so a copied cookie dies with it.
//
// The package knows nothing of HTTP frameworks; internal/web wires it in.
package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Role is what a person may do. The zero Role may do nothing.
type Role int

const (
	RoleNone Role = iota
	// RoleViewer reads the pages of the apps it is held on.
	RoleViewer
	// RoleOperator also acts on them: trips, resumes, edits.
	RoleOperator
	// RoleAdmin operates every app and manages Fusebox itself: teams,
	// channels shared between teams, its own loops and locks.
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole reads "viewer", "operator", "admin" or "none".
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return RoleViewer, nil
	case "operator":
		return RoleOperator, nil
	case "admin":
		return RoleAdmin, nil
	case "none":
		return RoleNone, nil
	}
	return RoleNone, fmt.Errorf("auth: unknown role %q", s)
}

// Allows reports whether r includes need.
func (r Role) Allows(need Role) bool { return need != RoleNone && r >= need }

// Principal is a signed-in person.
type Principal struct {
	Subject string // stable id at the provider (or the local user name)
	Name    string // for display and the audit log
	Email   string
	// Role is held on every app (an admin's also on Fusebox itself);
	// Teams adds a role on one team's apps. A person may hold neither:
	// signed in, they see an empty Fusebox that says why.
	Role     Role
	Teams    map[string]Role
	Provider string // "local", "oidc", "easyauth" or "token"
	// Claims are the values of the provider's role and group claims, kept
	// so that a team's membership changed on the Teams page applies to a
	// session already begun. At most MaxClaims of at most MaxClaimLen.
	Claims []string
	// Until is when the credential ends (an issued token's expiry); zero:
	// it does not, or it is not known.
	Until time.Time
}

// Bounds on the claim values a session keeps: Entra ID sends at most 200
// groups in a token (more become an overage link, not values).
const (
	MaxClaims   = 200
	MaxClaimLen = 256
)

// On is the role p holds on the apps of team ("": apps of no team, which
// only roles held on every app reach).
func (p Principal) On(team string) Role {
	r := p.Role
	if t := p.Teams[team]; team != "" && t > r {
		r = t
	}
	return r
}

// Top is the highest role p holds anywhere: what a route needs at least.
func (p Principal) Top() Role {
	r := p.Role
	for _, t := range p.Teams {
		r = max(r, t)
	}
	return r
}

// Admin says p manages Fusebox itself.
func (p Principal) Admin() bool { return p.Role == RoleAdmin }

// TeamsWith lists, sorted, the teams on whose apps p holds at least role
// through membership (roles held everywhere are not listed).
func (p Principal) TeamsWith(role Role) []string {
	var out []string
	for t, r := range p.Teams {
		if r.Allows(role) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// keepClaims bounds what a session keeps of a provider's claim values.
func keepClaims(values []string) []string {
	var out []string
	for _, v := range values {
		if v == "" || len(v) > MaxClaimLen || slices.Contains(out, v) {
			continue
		}
		if out = append(out, v); len(out) == MaxClaims {
			break
		}
	}
	return out
}

// Errors shown to people, in words they can act on.
var (
	ErrBadCredentials = errors.New("the user name or password is not right")
	ErrNoSession      = errors.New("not signed in, or the session has ended")
)

// RoleMapper turns claim values (app roles or group ids) into the role
// held on every app. Teams map values to roles on their own apps
// (teams.Directory); TeamClaim names a second claim read for them.
type RoleMapper struct {
	Claim     string
	TeamClaim string // such as "groups"; empty: only Claim
	roles     map[string]Role
}

// NewRoleMapper grants admin, operator or viewer on every app to any of
// the values listed for it found in the named claim.
func NewRoleMapper(claim string, adminValues, operatorValues, viewerValues []string) RoleMapper {
	m := RoleMapper{Claim: claim, roles: map[string]Role{}}
	for role, values := range map[Role][]string{RoleAdmin: adminValues, RoleOperator: operatorValues, RoleViewer: viewerValues} {
		for _, v := range values {
			m.roles[v] = max(m.roles[v], role)
		}
	}
	return m
}

// Map returns the highest role any value grants.
func (m RoleMapper) Map(values []string) Role {
	role := RoleNone
	for _, v := range values {
		role = max(role, m.roles[v])
	}
	return role
}

// claimValues reads a claim that may be a string or a list of strings.
func claimValues(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return x
	}
	return nil
}

// signer makes and checks HMAC-SHA256 tags. Each use has its own purpose
// string, so a tag made for one thing (a session) never verifies as another
// (a CSRF token).
type signer struct{ key []byte }

func (s signer) tag(purpose, value string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return m.Sum(nil)
}

// sign returns value.tag.
func (s signer) sign(purpose, value string) string {
	return value + "." + base64.RawURLEncoding.EncodeToString(s.tag(purpose, value))
}

// verify checks a value made by sign, in constant time, and returns the value.
func (s signer) verify(purpose, signed string) (string, bool) {
	i := strings.LastIndexByte(signed, '.')
	if i < 0 {
		return "", false
	}
	value, tagText := signed[:i], signed[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(tagText)
	if err != nil {
		return "", false
	}
	return value, hmac.Equal(got, s.tag(purpose, value))
}
