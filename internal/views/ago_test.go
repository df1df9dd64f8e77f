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

// A time to come is said in the unit its rounding lands in: 59 min 40 s
// is "in 1 h", as an hour and a minute is, never "in 60 min".
func TestUntilRoundsIntoTheNextUnit(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{40 * time.Second, "in 40 s"},
		{59*time.Minute + 20*time.Second, "in 59 min"},
		{59*time.Minute + 40*time.Second, "in 1 h"},
		{61 * time.Minute, "in 1 h"},
		{23*time.Hour + 40*time.Minute, "in 24 h"},
	} {
		if got := views.Until(now, now.Add(tc.in)); got != tc.want {
			t.Errorf("Until(+%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
