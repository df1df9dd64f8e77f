package web

import (
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/bounded"
)

// ttlSet remembers keys for a while, up to a bound: pings for ids that do
// not exist are answered from it without a storage read. It is small on
// purpose; when full, it forgets what has expired and, if still full, adds
// nothing, so a flood of random ids costs a storage read each and memory
// stays bounded.
type ttlSet struct {
	ttl time.Duration
	max int

	mu   sync.Mutex
	keys map[string]time.Time // key -> expiry
	room bounded.Room
}

func newTTLSet(ttl time.Duration, max int) *ttlSet {
	return &ttlSet{ttl: ttl, max: max, keys: map[string]time.Time{}}
}

func (s *ttlSet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.keys[key]
	if ok && time.Now().After(exp) {
		delete(s.keys, key)
		return false
	}
	return ok
}

func (s *ttlSet) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !bounded.Make(&s.room, s.keys, s.max, now, func(exp time.Time) bool { return now.After(exp) }) {
		return
	}
	s.keys[key] = now.Add(s.ttl)
}

// clear forgets every key, when something they may name comes to exist.
func (s *ttlSet) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.keys)
}
