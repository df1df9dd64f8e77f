package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// EasyAuth reads the principal that App Service Authentication ("Easy
// Auth") puts in X-MS-CLIENT-PRINCIPAL after it has signed the person in.
// App Service strips that header from incoming requests, which is the only
// reason it can be trusted; anywhere else anyone can send it, so EasyAuth
// must be enabled explicitly.
type EasyAuth struct{ roles RoleMapper }

// NewEasyAuth maps the configured claim's values to roles.
func NewEasyAuth(roles RoleMapper) *EasyAuth { return &EasyAuth{roles: roles} }

// ErrBadPrincipal is a header that is present but cannot be read.
var ErrBadPrincipal = errors.New("the X-MS-CLIENT-PRINCIPAL header is malformed")

type clientPrincipal struct {
	AuthType string `json:"auth_typ"`
	NameType string `json:"name_typ"`
	RoleType string `json:"role_typ"`
	Claims   []struct {
		Type  string `json:"typ"`
		Value string `json:"val"`
	} `json:"claims"`
}

const maxPrincipalHeader = 16 << 10

// Principal decodes the header's value. A malformed value or one without a
// subject is ErrBadPrincipal. One whose claims grant no role is still a
// principal: teams may map its claims (Principal.Claims).
func (e *EasyAuth) Principal(header string) (Principal, error) {
	if header == "" || len(header) > maxPrincipalHeader {
		return Principal{}, ErrBadPrincipal
	}
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(header); err != nil {
			return Principal{}, ErrBadPrincipal
		}
	}
	var cp clientPrincipal
	if err := json.Unmarshal(raw, &cp); err != nil || cp.AuthType == "" {
		return Principal{}, ErrBadPrincipal
	}
	claims := map[string][]string{}
	for _, c := range cp.Claims {
		claims[c.Type] = append(claims[c.Type], c.Value)
	}
	first := func(types ...string) string {
		for _, t := range types {
			if v := claims[t]; len(v) > 0 && v[0] != "" {
				return v[0]
			}
		}
		return ""
	}
	p := Principal{
		Subject: first("http://schemas.microsoft.com/identity/claims/objectidentifier", "oid", "sub",
			"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier"),
		Name:     first(cp.NameType, "name", "preferred_username", "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name"),
		Email:    first("email", "preferred_username", "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress"),
		Provider: "easyauth",
	}
	if p.Subject == "" {
		return Principal{}, ErrBadPrincipal
	}
	if p.Name == "" {
		p.Name = p.Subject
	}
	values := claims[e.roles.Claim]
	if cp.RoleType != "" && cp.RoleType != e.roles.Claim && strings.EqualFold(e.roles.Claim, "roles") {
		values = append(values, claims[cp.RoleType]...)
	}
	p.Role = e.roles.Map(values)
	if tc := e.roles.TeamClaim; tc != "" && tc != e.roles.Claim {
		values = append(values, claims[tc]...)
	}
	p.Claims = keepClaims(values)
	return p, nil
}
