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
	"strings"
	"time"
)

// Role is what a person may do. The zero Role may do nothing.
type Role int

const (
	RoleNone Role = iota
	// RoleViewer reads every page.
	RoleViewer
	// RoleOperator also acts: trips, resumes, edits.
	RoleOperator
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	}
	return "none"
}

// ParseRole reads "viewer" or "operator".
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return RoleViewer, nil
	case "operator":
		return RoleOperator, nil
	}
	return RoleNone, fmt.Errorf("auth: unknown role %q", s)
}

// Allows reports whether r includes need.
func (r Role) Allows(need Role) bool { return need != RoleNone && r >= need }

// Principal is a signed-in person.
type Principal struct {
	Subject  string // stable id at the provider (or the local user name)
	Name     string // for display and the audit log
	Email    string
	Role     Role
	Provider string // "local", "oidc", "easyauth" or "token"
	// Until is when the credential ends (an issued token's expiry); zero:
	// it does not, or it is not known.
	Until time.Time
}

// Errors shown to people, in words they can act on.
var (
	ErrBadCredentials = errors.New("the user name or password is not right")
	ErrNoRole         = errors.New("your account has no Fusebox role; ask an administrator to grant you viewer or operator")
	ErrNoSession      = errors.New("not signed in, or the session has ended")
)

// RoleMapper turns claim values (app roles or group ids) into a Role.
type RoleMapper struct {
	Claim    string
	operator map[string]bool
	viewer   map[string]bool
}

// NewRoleMapper grants operator to any of operatorValues and viewer to any
// of viewerValues found in the named claim.
func NewRoleMapper(claim string, operatorValues, viewerValues []string) RoleMapper {
	m := RoleMapper{Claim: claim, operator: map[string]bool{}, viewer: map[string]bool{}}
	for _, v := range operatorValues {
		m.operator[v] = true
	}
	for _, v := range viewerValues {
		m.viewer[v] = true
	}
	return m
}

// Map returns the highest role any value grants.
func (m RoleMapper) Map(values []string) Role {
	role := RoleNone
	for _, v := range values {
		switch {
		case m.operator[v]:
			return RoleOperator
		case m.viewer[v]:
			role = RoleViewer
		}
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
