package bounded

import (
	"testing"
	"time"
)

// A full map of live entries is scanned once a SweepGap, not once per
// refused key, and takes a key again once an entry has expired.
func TestAFullMapIsScannedOnceAGap(t *testing.T) {
	start := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	m := map[string]time.Time{"a": start.Add(time.Minute), "b": start.Add(2 * time.Minute)}
	var room Room
	scanned := 0
	expired := func(now time.Time) func(time.Time) bool {
		return func(exp time.Time) bool { scanned++; return now.After(exp) }
	}
	for i := range 1000 {
		now := start.Add(time.Duration(i) * time.Millisecond)
		if Make(&room, m, 2, now, expired(now)) {
			t.Fatalf("a full map of live entries took a key at %s", now)
		}
	}
	if scanned != 2 {
		t.Errorf("1,000 refusals within a second scanned %d entries, want one scan of 2", scanned)
	}
	later := start.Add(90 * time.Second)
	if !Make(&room, m, 2, later, expired(later)) || len(m) != 1 {
		t.Errorf("after the first entry expired: map %v, want room for one", m)
	}
}
