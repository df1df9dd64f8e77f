package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// App keys let a function app's code report failures over HTTP. A key reads
// "fbx_<app id>_<secret>": the app id says which hash to compare with, so a
// lookup needs no scan, and only the SHA-256 of the key is stored.

// NewAppKey makes a key for an app and returns it with the hash to store.
func NewAppKey(appID string) (key, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	key = "fbx_" + appID + "_" + base64.RawURLEncoding.EncodeToString(b)
	return key, HashAppKey(key)
}

// HashAppKey is the stored form of a key.
func HashAppKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// AppOfKey returns the app id a key names, or "" when it is not a key.
func AppOfKey(key string) string {
	rest, ok := strings.CutPrefix(key, "fbx_")
	if !ok || len(key) > 256 {
		return ""
	}
	i := strings.IndexByte(rest, '_') // app ids have no '_'; secrets may
	if i <= 0 || i == len(rest)-1 {
		return ""
	}
	return rest[:i]
}

// AppKeyMatches compares a presented key with a stored hash in constant time.
func AppKeyMatches(key, storedHash string) bool {
	if storedHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(HashAppKey(key)), []byte(storedHash)) == 1
}
