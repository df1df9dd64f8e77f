// Package bounded keeps in-memory maps that untrusted input fills to a
// size fixed before anything is read.
package bounded

import (
	"maps"
	"time"
)

// SweepGap is how long a full map of live entries refuses new keys
// before it is scanned for expired ones again: under a flood of new keys
// (one per address or forged app) a scan costs the whole map, so it is
// paid once a gap, not once per key.
const SweepGap = time.Second

// Room makes room in one map. Its zero value is ready to use; it belongs
// to the map, under the map's lock.
type Room struct {
	next time.Time // no scan before this
}

// Make says whether m may take one more entry of at most max: when it is
// full, the expired entries are dropped first (at most once a SweepGap),
// and if none has expired the new one is not kept.
func Make[V any](r *Room, m map[string]V, max int, now time.Time, expired func(V) bool) bool {
	if len(m) < max {
		return true
	}
	if now.Before(r.next) {
		return false
	}
	maps.DeleteFunc(m, func(_ string, v V) bool { return expired(v) })
	if len(m) >= max {
		r.next = now.Add(SweepGap)
		return false
	}
	return true
}
