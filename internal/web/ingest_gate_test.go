package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
)

// TestMadeUpAppIDsNeverPushOutARealAppsKey fills the key cache with more
// ids that name no app than it holds, long after the real app's entry
// went stale: the real app's key is still known, so its next report
// refreshes it without spending its address's budget of reads.
func TestMadeUpAppIDsNeverPushOutARealAppsKey(t *testing.T) {
	var k appKeys
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	const key = "fbx_orders_secret"
	k.remember("orders", auth.HashAppKey(key), t0)
	later := t0.Add(10 * keyTTL)
	for i := range maxLimiterKeys + 500 {
		k.remember(fmt.Sprintf("made-up-%d", i), "", later)
	}
	e, ok := k.get("orders")
	if !ok || !e.matches(key) {
		t.Fatalf("after %d made-up ids the real app's key is %+v, %v: its reports would spend the per-address budget again", maxLimiterKeys+500, e, ok)
	}
	if _, ok := k.get(fmt.Sprintf("made-up-%d", maxLimiterKeys+499)); ok {
		t.Error("the cache of ids that name no app grew past its bound")
	}
	if len(k.absent) > maxLimiterKeys || len(k.known) != 1 {
		t.Errorf("holds %d absent and %d known ids, want at most %d and 1", len(k.absent), len(k.known), maxLimiterKeys)
	}
}
