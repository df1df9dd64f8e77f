package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/bounded"
)

// AppKeyTTL is how long a verified app key is believed without a read: a
// key replaced on another Fusebox instance stops working within it.
const AppKeyTTL = time.Minute

// DefaultMaxAppKeys bounds each of AppKeys' maps unless Max says
// otherwise: an entry is an app id (at most 64 bytes) and a 64-byte hash,
// so about 2 MB for both maps when full.
const DefaultMaxAppKeys = 10_000

// ErrNoSuchApp is what an AppKeys lookup answers for an id that names no
// app.
var ErrNoSuchApp = errors.New("auth: no such app")

// Key verdicts.
var (
	// ErrUnknownKey: the key is not the app's, or the app does not exist.
	ErrUnknownKey = errors.New("auth: unknown app key")
	// ErrKeyReadsSpent: the key would cost a storage read, and the address
	// it came from has spent its reads.
	ErrKeyReadsSpent = errors.New("auth: too many keys that do not verify")
)

// AppKeys verifies the keys apps present with their failure reports,
// reading storage as little as a flood allows. It remembers, per app id a
// report named, the hash of the app's key as storage last had it and
// until when it is believed; ids storage said name no app are kept apart.
// A key that matches a fresh entry verifies without a read, and one that
// does not is refused without a read unless the address it came from may
// spend one (the key may have been replaced on another instance). Entries
// are kept past their time, so the holder of the last known key refreshes
// it without spending its address's budget. Only a read that found the
// app adds to known, so a flood of made-up ids fills absent alone and
// never pushes out a real app's entry, fresh or not. Each map holds at
// most Max ids, and
// only after a storage read: a made-up id costs its sender a read first.
type AppKeys struct {
	// Hash reads the app's key hash from storage; ErrNoSuchApp when the
	// id names no app.
	Hash func(ctx context.Context, appID string) (string, error)
	Max  int // default DefaultMaxAppKeys

	mu     sync.Mutex
	known  map[string]appKey
	absent map[string]time.Time // id -> until when "no such app" is believed

	knownRoom, absentRoom bounded.Room
}

type appKey struct {
	hash  string
	until time.Time
}

// Verify says whether key is appID's, at now. mayRead is asked before a
// key that did not match what is known costs a read (the caller's budget
// per client address); a read's error other than ErrNoSuchApp comes back
// as it is.
func (k *AppKeys) Verify(ctx context.Context, appID, key string, now time.Time, mayRead func() bool) error {
	known, ok := k.get(appID)
	fresh, match := ok && now.Before(known.until), ok && known.matches(key)
	switch {
	case match && fresh:
		return nil // verified without a read
	case fresh && known.hash == "": // storage said: no such app
		return ErrUnknownKey
	case !match && !mayRead():
		// Not the key storage had lately, or nothing known: forged, most
		// likely, and each costs a read.
		return ErrKeyReadsSpent
	}
	// Read: the holder of the last known key refreshes it without spending
	// its address's budget; anyone else spent one of its reads above (the
	// key may have been replaced).
	hash, err := k.Hash(ctx, appID)
	switch {
	case errors.Is(err, ErrNoSuchApp):
		k.remember(appID, "", now)
		return ErrUnknownKey
	case err != nil:
		return err
	}
	k.remember(appID, hash, now)
	if !AppKeyMatches(key, hash) {
		return ErrUnknownKey
	}
	return nil
}

func (k *AppKeys) max() int {
	if k.Max > 0 {
		return k.Max
	}
	return DefaultMaxAppKeys
}

// Forget drops an app's key, when it is replaced on this instance.
func (k *AppKeys) Forget(appID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.known, appID)
	delete(k.absent, appID)
}

func (k *AppKeys) get(appID string) (appKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.known[appID]; ok {
		return e, true
	}
	until, ok := k.absent[appID]
	return appKey{until: until}, ok
}

// matches compares a presented key with the known hash in constant time.
func (e appKey) matches(key string) bool {
	return e.hash != "" && subtle.ConstantTimeCompare([]byte(HashAppKey(key)), []byte(e.hash)) == 1
}

// remember keeps what storage said of appID: its key's hash, or "" for no
// such app.
func (k *AppKeys) remember(appID, hash string, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.known == nil {
		k.known, k.absent = map[string]appKey{}, map[string]time.Time{}
	}
	until := now.Add(AppKeyTTL)
	if hash == "" {
		delete(k.known, appID)
		if _, ok := k.absent[appID]; ok || bounded.Make(&k.absentRoom, k.absent, k.max(), now, now.After) {
			k.absent[appID] = until
		}
		return
	}
	delete(k.absent, appID)
	if _, ok := k.known[appID]; ok || bounded.Make(&k.knownRoom, k.known, k.max(), now, func(e appKey) bool { return now.After(e.until) }) {
		k.known[appID] = appKey{hash: hash, until: until}
	}
}
