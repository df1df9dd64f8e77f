package auth_test

import (
	"context"
	"errors"
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
	const max, key = 1000, "fbx_orders_secret"
	reads := 0
	k := &auth.AppKeys{Max: max, Hash: func(_ context.Context, appID string) (string, error) {
		reads++
		if appID == "orders" {
			return auth.HashAppKey(key), nil
		}
		return "", auth.ErrNoSuchApp
	}}
	always, never := func() bool { return true }, func() bool { return false }
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	if err := k.Verify(t.Context(), "orders", key, t0, always); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(10 * auth.AppKeyTTL)
	for i := range max + 500 {
		if err := k.Verify(t.Context(), fmt.Sprintf("made-up-%d", i), "fbx_x_y", later, always); !errors.Is(err, auth.ErrUnknownKey) {
			t.Fatalf("made-up id %d: %v", i, err)
		}
	}
	// The stale entry is refreshed by its holder with no read left to spend.
	before := reads
	if err := k.Verify(t.Context(), "orders", key, later, never); err != nil {
		t.Fatalf("after %d made-up ids the real app's key does not verify without the address's budget: %v", max+500, err)
	}
	if reads != before+1 {
		t.Errorf("the stale key cost %d reads, want 1 (its refresh)", reads-before)
	}
	// Fresh again: no read at all.
	if err := k.Verify(t.Context(), "orders", key, later.Add(time.Second), never); err != nil || reads != before+1 {
		t.Errorf("a fresh key: %v after %d reads, want none", err, reads-before-1)
	}
	// A wrong key for a known app costs a read only when the address may.
	if err := k.Verify(t.Context(), "orders", "fbx_orders_forged", later.Add(time.Second), never); !errors.Is(err, auth.ErrKeyReadsSpent) {
		t.Errorf("a forged key with no reads left: %v, want ErrKeyReadsSpent", err)
	}
}
