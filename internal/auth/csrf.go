package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
)

// CSRF protects state-changing forms with synchronizer tokens. Each browser
// gets a random id in an HttpOnly cookie; a form's token is that id's HMAC
// under the server key. A forged request from another site cannot read the
// token, and planting a cookie does not help because the attacker cannot
// compute its HMAC.
type CSRF struct{ signer signer }

// NewCSRF uses key (at least 32 bytes) to sign tokens.
func NewCSRF(key []byte) (*CSRF, error) {
	if len(key) < 32 {
		return nil, errors.New("auth: the CSRF key must be at least 32 bytes")
	}
	return &CSRF{signer: signer{key: key}}, nil
}

const csrfPurpose = "fusebox-csrf"

// NewBrowserID returns a fresh random id for the CSRF cookie.
func (c *CSRF) NewBrowserID() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Token is the value forms must send back for the browser with this id.
func (c *CSRF) Token(browserID string) string {
	return base64.RawURLEncoding.EncodeToString(c.signer.tag(csrfPurpose, browserID))
}

// Valid reports, in constant time, whether token was made for browserID.
func (c *CSRF) Valid(browserID, token string) bool {
	if browserID == "" || token == "" {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return false
	}
	return hmac.Equal(got, c.signer.tag(csrfPurpose, browserID))
}
