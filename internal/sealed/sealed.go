// Package sealed encrypts the secrets Fusebox keeps in Table Storage (the
// host storage connection strings and Event Hubs connections of guarded
// apps, the URLs and signing secrets of channels) with AES-256-GCM, so that
// someone who reads the tables (a backup, a SAS leaked for another purpose,
// a storage browser) does not read them.
//
// A sealed value reads "sealed:v1:<key id>:<base64url(nonce | ciphertext)>".
// The key id travels with the value, so keys rotate: the first key seals,
// every key opens. The associated data names the table, row and field, so
// a sealed value copied to another row or field does not open. A value
// without the prefix is a plaintext one written before sealing: Open
// returns it as it is and says so, and the stores seal it on their next
// write (Reseal at start-up does that for every row).
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

const prefix = "sealed:v1:"

// Key is one key, by id.
type Key struct {
	ID     string // no ':'
	Secret []byte // any length of at least 32 bytes; the AES key is derived from it
}

// Box seals with its first key and opens with any.
type Box struct {
	current string
	aeads   map[string]cipher.AEAD
}

// ErrOpen is a sealed value that does not open: an unknown key id, another
// key, a value moved from another field, or tampering.
var ErrOpen = errors.New("sealed: the value does not open")

// New makes a Box; keys[0] seals.
func New(keys ...Key) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("sealed: no key")
	}
	b := &Box{current: keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for _, k := range keys {
		if k.ID == "" || strings.Contains(k.ID, ":") {
			return nil, fmt.Errorf("sealed: key id %q must be non-empty without ':'", k.ID)
		}
		if len(k.Secret) < 32 {
			return nil, fmt.Errorf("sealed: key %s is shorter than 32 bytes", k.ID)
		}
		aesKey, err := hkdf.Key(sha256.New, k.Secret, nil, "fusebox-secrets-at-rest", 32)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(aesKey)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		b.aeads[k.ID] = aead
	}
	return b, nil
}

// Sealed reports whether v is a sealed value.
func Sealed(v string) bool { return strings.HasPrefix(v, prefix) }

// Stale reports whether v should be sealed again: plaintext, or sealed
// with a key that is no longer the first.
func (b *Box) Stale(v string) bool {
	if v == "" || b == nil {
		return false
	}
	rest, ok := strings.CutPrefix(v, prefix)
	return !ok || !strings.HasPrefix(rest, b.current+":")
}

// Seal encrypts v for where (table/row/field); "" stays "".
func (b *Box) Seal(v, where string) string {
	if v == "" || b == nil {
		return v
	}
	aead := b.aeads[b.current]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := aead.Seal(nonce, nonce, []byte(v), []byte(where))
	return prefix + b.current + ":" + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts v, sealed for where. A plaintext v (written before
// sealing) is returned as it is, with plain true.
func (b *Box) Open(v, where string) (s string, plain bool, err error) {
	rest, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return v, v != "", nil
	}
	if b == nil {
		return "", false, fmt.Errorf("%w: no key is configured", ErrOpen)
	}
	id, data, ok := strings.Cut(rest, ":")
	aead := b.aeads[id]
	if !ok || aead == nil {
		return "", false, fmt.Errorf("%w: sealed with key %q, which is not configured (FUSEBOX_SECRETS_KEYS)", ErrOpen, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(data)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", false, fmt.Errorf("%w: not base64url of a nonce and ciphertext", ErrOpen)
	}
	pt, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(where))
	if err != nil {
		return "", false, fmt.Errorf("%w: key %s does not open it here", ErrOpen, id)
	}
	return string(pt), false, nil
}
