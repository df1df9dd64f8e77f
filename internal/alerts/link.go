package alerts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Link is what a signed link says: who may do what to which episode of
// which circuit, until when, under which key.
type Link struct {
	Circuit string `json:"c"` // app/function
	Episode int64  `json:"e"`
	// Incarnation is the circuit's: a link outlives neither the circuit's
	// deletion nor its re-creation, whose episodes start again at 1.
	Incarnation string    `json:"i,omitempty"`
	Action      string    `json:"a"` // ActionResume or ActionThrottle
	Recipient   string    `json:"r"` // who it was mailed to
	Expires     time.Time `json:"-"`
	ExpiresAt   int64     `json:"x"`
	KeyID       string    `json:"k"`
}

// What a link does.
const (
	ActionResume   = "resume"
	ActionThrottle = "throttle"
)

// Errors of links, for the page that explains them.
var (
	ErrMalformed = errors.New("alerts: this link is damaged or incomplete")
	ErrForged    = errors.New("alerts: this link was not made by this Fusebox")
	ErrExpired   = errors.New("alerts: this link has expired")
)

// Signer makes and checks links. Several keys may be active at once, so a
// key can be rotated without breaking links already mailed: new links are
// signed with the current key, and any listed key verifies.
type Signer struct {
	current string
	keys    map[string][]byte
}

// NewSigner signs with current and accepts every key in keys.
func NewSigner(current string, keys map[string][]byte) (*Signer, error) {
	if _, ok := keys[current]; !ok {
		return nil, fmt.Errorf("alerts: the current link key %q is not among the keys", current)
	}
	for id, k := range keys {
		if len(k) < 32 {
			return nil, fmt.Errorf("alerts: link key %q is shorter than 32 bytes", id)
		}
		if id == "" || strings.ContainsAny(id, ".:,") {
			return nil, fmt.Errorf("alerts: link key id %q must be non-empty without . : or ,", id)
		}
	}
	return &Signer{current: current, keys: keys}, nil
}

const linkPurpose = "fusebox-link\x00"

func mac(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(linkPurpose))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Sign returns the token for a link.
func (s *Signer) Sign(l Link) string {
	l.KeyID, l.ExpiresAt = s.current, l.Expires.Unix()
	data, _ := json.Marshal(l)
	payload := base64.RawURLEncoding.EncodeToString(data)
	return payload + "." + base64.RawURLEncoding.EncodeToString(mac(s.keys[s.current], payload))
}

// maxToken bounds what Verify will look at.
const maxToken = 2048

// Verify checks a token's form, signature (in constant time) and expiry at
// now, and returns the link. Whether the link's episode is still the
// circuit's is for the caller to check.
func (s *Signer) Verify(token string, now time.Time) (Link, error) {
	if len(token) > maxToken {
		return Link{}, ErrMalformed
	}
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || payload == "" || sig == "" {
		return Link{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Link{}, ErrMalformed
	}
	data, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Link{}, ErrMalformed
	}
	var l Link
	if err := json.Unmarshal(data, &l); err != nil {
		return Link{}, ErrMalformed
	}
	key, ok := s.keys[l.KeyID]
	if !ok || !hmac.Equal(got, mac(key, payload)) {
		return Link{}, ErrForged
	}
	if l.Circuit == "" || l.Action == "" || l.Episode < 1 || l.ExpiresAt == 0 {
		return Link{}, ErrMalformed
	}
	l.Expires = time.Unix(l.ExpiresAt, 0).UTC()
	if !now.Before(l.Expires) {
		return Link{}, ErrExpired
	}
	return l, nil
}
