package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// APIToken is a configured token for scripts calling the JSON API.
type APIToken struct {
	Name string
	Role Role
	Hash string // hex SHA-256 of the token
}

// APITokens checks bearer tokens against the configured hashes.
type APITokens struct{ tokens []APIToken }

// NewAPITokens holds the configured tokens.
func NewAPITokens(tokens []APIToken) *APITokens { return &APITokens{tokens: tokens} }

// NewAPIToken makes a token and the hash to configure.
func NewAPIToken() (token, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = "fbt_" + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(sum[:])
}

// Principal returns who a bearer token belongs to. Every configured hash is
// compared, in constant time, so timing says nothing about which matched.
func (a *APITokens) Principal(token string) (Principal, bool) {
	if !strings.HasPrefix(token, "fbt_") {
		return Principal{}, false
	}
	sum := sha256.Sum256([]byte(token))
	got := []byte(hex.EncodeToString(sum[:]))
	var found *APIToken
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(got, []byte(a.tokens[i].Hash)) == 1 {
			found = &a.tokens[i]
		}
	}
	if found == nil {
		return Principal{}, false
	}
	return Principal{Subject: "token:" + found.Name, Name: found.Name, Role: found.Role, Provider: "token"}, true
}
