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

// Token is the value forms must send back for the browser with this id:
// its HMAC, masked with a fresh random pad (pad, then pad XOR HMAC), so no
// two responses carry the same bytes and a compressed page does not leak
// the secret to an attacker who can add text to it and watch its size
// (BREACH).
func (c *CSRF) Token(browserID string) string {
	tag := c.signer.tag(csrfPurpose, browserID)
	out := make([]byte, 2*len(tag))
	_, _ = rand.Read(out[:len(tag)])
	for i, b := range tag {
		out[len(tag)+i] = out[i] ^ b
	}
	return base64.RawURLEncoding.EncodeToString(out)
}

// Valid reports, in constant time, whether token was made for browserID.
func (c *CSRF) Valid(browserID, token string) bool {
	if browserID == "" || token == "" {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(token)
	want := c.signer.tag(csrfPurpose, browserID)
	if err != nil || len(got) != 2*len(want) {
		return false
	}
	tag := make([]byte, len(want))
	for i := range tag {
		tag[i] = got[i] ^ got[len(want)+i]
	}
	return hmac.Equal(tag, want)
}
