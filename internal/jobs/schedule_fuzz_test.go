package jobs

import (
	"testing"
	"time"
)

// FuzzParseCron checks that no expression makes the parser or the slot walk
// panic, and that every slot of an accepted expression is in the asked
// range, in order, and on a whole second.
func FuzzParseCron(f *testing.F) {
	for _, seed := range []string{"*/5 * * * *", "0 */5 * * * *", "0 30 9 * * MON-FRI", "0 0 0 29 2 *", "0 0 2 * * SUN",
		"1-2,5 * * * *", "*/0 * * * *", "60 * * * * *", "a b c d e", "* * * * * * *", "0 0 0 31 4 *", "5-1 * * * *"} {
		f.Add(seed, uint8(1))
	}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"}
	f.Fuzz(func(t *testing.T, expr string, zone uint8) {
		if len(expr) > 200 {
			return
		}
		loc, err := time.LoadLocation(zones[int(zone)%len(zones)])
		if err != nil {
			t.Skip(err)
		}
		c, err := ParseCron(expr, loc)
		if err != nil {
			return
		}
		from := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC) // a DST change in Europe and elsewhere
		to := from.Add(48 * time.Hour)
		slots := c.Slots(from, to)
		for i, s := range slots {
			if s.Before(from) || !s.Before(to) {
				t.Fatalf("%q: slot %s outside [%s, %s)", expr, s, from, to)
			}
			if i > 0 && !slots[i-1].Before(s) {
				t.Fatalf("%q: slots out of order: %s then %s", expr, slots[i-1], s)
			}
			if s.Nanosecond() != 0 {
				t.Fatalf("%q: slot %s is not on a whole second", expr, s)
			}
		}
	})
}
