package jobs_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

// "Every Sunday 02:00 Europe/Berlin for 2 h", across the spring-forward of
// 29 March 2026, when 02:00 does not exist there (so there is no opening
// that Sunday, as for any schedule), and the fall-back of 25 October, when
// 02:00 comes twice (one opening, at the first).
func TestARecurringWindowAcrossDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	w := jobs.Window{ID: "w", Recurs: "0 2 * * 0", TimeZone: "Europe/Berlin", Duration: 2 * time.Hour, Reason: "backups",
		From: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	if errs := w.Validate(); errs != nil {
		t.Fatalf("Validate: %v", errs)
	}
	j := jobs.Job{}
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{time.Date(2026, 3, 22, 1, 59, 0, 0, berlin), false},
		{time.Date(2026, 3, 22, 2, 0, 0, 0, berlin), true},
		{time.Date(2026, 3, 22, 3, 59, 59, 0, berlin), true},
		{time.Date(2026, 3, 22, 4, 0, 0, 0, berlin), false},
		{time.Date(2026, 3, 29, 3, 30, 0, 0, berlin), false},   // 02:00 skipped: no opening
		{time.Date(2026, 4, 5, 2, 30, 0, 0, berlin), true},     // CEST now
		{time.Date(2026, 4, 5, 2, 0, 0, 0, time.UTC), false},   // 04:00 CEST: the 2 h are over
		{time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), true}, // 02:30 CEST, after the first 02:00
		{time.Date(2026, 10, 25, 1, 59, 0, 0, time.UTC), true}, // 02:59 CET: still within 2 h of 02:00 CEST
		{time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC), false}, // 03:00 CET: 2 h after the first 02:00
		{time.Date(2027, 1, 3, 2, 30, 0, 0, berlin), false},    // a Sunday past its Until
	} {
		if got := w.Covers(j, tc.at); got != tc.want {
			t.Errorf("Covers(%s) = %v, want %v", tc.at.In(berlin).Format("Mon 2 Jan 15:04 MST"), got, tc.want)
		}
	}
	next := w.Next(time.Date(2026, 3, 23, 0, 0, 0, 0, time.UTC), 2)
	if len(next) != 2 || !next[0].Equal(time.Date(2026, 4, 5, 2, 0, 0, 0, berlin)) {
		t.Errorf("next openings = %v, want 5 April first (29 March has none)", next)
	}
	never := w
	never.Recurs = "0 2 30 2 *" // 30 February
	if errs := never.Validate(); errs["recurs"] == "" {
		t.Errorf("an expression that never fires was accepted: %v", errs)
	}
	long := w
	long.Duration = 8 * 24 * time.Hour
	if errs := long.Validate(); errs["duration"] == "" {
		t.Error("an 8-day opening was accepted")
	}
}
