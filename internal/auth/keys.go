package auth

import (
	"crypto/hkdf"
	"crypto/sha256"
)

// Key purposes: each use of the session key signs with a key of its own,
// so a value made for one purpose (a CSRF token, an OIDC state) never
// verifies as another (a session).
const (
	PurposeSessions  = "fusebox-sessions"
	PurposeCSRF      = "fusebox-csrf"
	PurposeOIDCState = "fusebox-oidc-state"
)

// DeriveKey is HKDF-SHA256 of master for purpose: 32 bytes.
func DeriveKey(master []byte, purpose string) []byte {
	k, err := hkdf.Key(sha256.New, master, nil, purpose, 32)
	if err != nil {
		panic("auth: HKDF refused a 32-byte key: " + err.Error()) // only for lengths over 255*32
	}
	return k
}
