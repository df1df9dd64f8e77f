package views_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/views"
)

// A time a few seconds ahead of Fusebox's clock is the storage service's
// clock, not the future; a time well ahead is said as it is.
func TestAgoToleratesAnotherClocksSkew(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{-2 * time.Minute, "in the future"},
		{-5 * time.Second, "just now"},
		{0, "just now"},
		{30 * time.Second, "30 s ago"},
		{3 * time.Hour, "3 h ago"},
	} {
		if got := views.Ago(now, now.Add(-tc.at)); got != tc.want {
			t.Errorf("%s ago: %q, want %q", tc.at, got, tc.want)
		}
	}
}
