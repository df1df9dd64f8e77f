// Package bounded keeps maps that what others send may fill within a
// size fixed before anything is read.
package bounded

import "maps"

// MakeRoom says whether m may take one more entry of at most max: when it
// is full, the expired entries are dropped first, and if none has
// expired the new one is not kept.
func MakeRoom[V any](m map[string]V, max int, expired func(V) bool) bool {
	if len(m) < max {
		return true
	}
	maps.DeleteFunc(m, func(_ string, v V) bool { return expired(v) })
	return len(m) < max
}
