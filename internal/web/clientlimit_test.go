package web

import (
	"fmt"
	"testing"
)

// Sign-in attempts and machine intake are limited per client address in
// bounded memory: 25,000 addresses leave at most maxLimiterKeys buckets,
// and an address seen before keeps its own bucket (spent, it is refused)
// while fresh ones share the overflow.
func TestAClientLimiterHoldsABoundedNumberOfAddresses(t *testing.T) {
	t.Parallel()
	l := newKeyedLimiter(0.001, 2)
	l.allow("203.0.113.7")
	l.allow("203.0.113.7")
	for i := range 25_000 {
		l.allow(fmt.Sprintf("198.51.%d.%d", i/256, i%256))
	}
	if n := len(l.buckets); n > maxLimiterKeys {
		t.Errorf("%d buckets after 25,000 addresses, want at most %d", n, maxLimiterKeys)
	}
	if l.allow("203.0.113.7") {
		t.Error("a known address's spent bucket was forgotten under the flood")
	}
}
