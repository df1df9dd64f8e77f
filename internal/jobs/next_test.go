package jobs_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

// TestNextAndPrevAgreeWithTheListedSlots: for schedules of every shape,
// in zones with daylight-saving changes, around the changes and at random
// instants, the slot found field by field is the one listing the slots
// finds.
func TestNextAndPrevAgreeWithTheListedSlots(t *testing.T) {
	exprs := []string{"0 * * * * *", "*/30 * * * * *", "* * * * *", "*/7 * * * *", "30 2 * * *", "0 0 29 2 *", "0 0 31 * *",
		"15 3 * * MON-FRI", "0 9 1-7 * 1", "0 0 9 1-7 * 1", "0 30 1,2,3 * * *", "0 0 * * * *", "45 59 23 31 12 *", "0 0 12 * JAN,JUL SUN"}
	zones := []string{"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "America/Santiago"}
	rng := rand.New(rand.NewPCG(1, 2))
	var instants []time.Time
	for _, base := range []time.Time{
		time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // Paris
		time.Date(2026, 3, 8, 6, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // New York
		time.Date(2026, 4, 4, 14, 45, 0, 0, time.UTC), time.Date(2026, 9, 5, 2, 0, 0, 0, time.UTC), // Lord Howe (30 min)
		time.Date(2026, 9, 6, 3, 30, 0, 0, time.UTC), time.Date(2026, 4, 5, 3, 30, 0, 0, time.UTC), // Santiago: at midnight
		time.Date(2028, 2, 28, 23, 59, 59, 500e6, time.UTC), time.Date(2026, 12, 31, 23, 59, 45, 0, time.UTC),
	} {
		for d := -3 * time.Hour; d <= 3*time.Hour; d += 43 * time.Minute {
			instants = append(instants, base.Add(d))
		}
	}
	for range 20 {
		instants = append(instants, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(3*365*24*time.Hour)))))
	}
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, expr := range exprs {
			c, err := jobs.ParseCron(expr, loc)
			if err != nil {
				t.Fatal(err)
			}
			for _, at := range instants {
				span := map[string]time.Duration{"0 0 29 2 *": 4 * 366 * 24 * time.Hour, "0 0 12 * JAN,JUL SUN": 200 * 24 * time.Hour,
					"45 59 23 31 12 *": 370 * 24 * time.Hour, "0 0 31 * *": 70 * 24 * time.Hour, "0 9 1-7 * 1": 40 * 24 * time.Hour, "0 0 9 1-7 * 1": 250 * 24 * time.Hour}[expr]
				if span == 0 {
					span = 2 * 24 * time.Hour
				}
				after := c.Slots(at, at.Add(span))
				next, ok := c.Next(at)
				if len(after) > 0 && (!ok || !next.Equal(after[0])) {
					t.Errorf("%s in %s, Next(%s) = %s, %v; the listed slots say %s", expr, zone, at, next, ok, after[0])
				}
				before := c.Slots(at.Add(-span), at.Add(time.Nanosecond))
				prev, ok := c.Prev(at)
				if len(before) > 0 && (!ok || !prev.Equal(before[len(before)-1])) {
					t.Errorf("%s in %s, Prev(%s) = %s, %v; the listed slots say %s", expr, zone, at, prev, ok, before[len(before)-1])
				}
			}
		}
	}
}

// TestADenseScheduleCostsWhatADailyOneDoes: finding the next slot of a
// schedule that fires every second allocates nothing and takes no longer
// than for one that fires once a day, whatever the day (a daylight-saving
// change included).
func TestADenseScheduleCostsWhatADailyOneDoes(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	dense, _ := jobs.ParseCron("* * * * * *", paris)
	change := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)
	allocs := testing.AllocsPerRun(100, func() { dense.Next(change); dense.Prev(change) })
	if allocs > 0 {
		t.Errorf("Next and Prev of every second on the day clocks go back allocate %v times", allocs)
	}
}

func BenchmarkScheduleNext(b *testing.B) {
	paris, _ := time.LoadLocation("Europe/Paris")
	for _, expr := range []string{"* * * * * *", "0 2 * * *", "0 0 29 2 1"} {
		c, _ := jobs.ParseCron(expr, paris)
		at := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
		b.Run(expr, func(b *testing.B) {
			for b.Loop() {
				c.Next(at)
			}
		})
	}
}

// TestAWindowThatOpensTooOftenIsRefused: a recurring window must open at
// most once a minute and not again before it ends; a job at most once a
// minute, seconds kept as NCRONTAB has them.
func TestAWindowThatOpensTooOftenIsRefused(t *testing.T) {
	from := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		recurs string
		lasts  time.Duration
		says   string
	}{
		{"* * * * * *", time.Minute, "at most once a minute"},
		{"*/1 * * * * *", time.Minute, "at most once a minute"},
		{"*/5 * * * *", 10 * time.Minute, "opens again 5m after it opened"},
		{"0 0 31 2 *", time.Hour, "never fires within five years"},
		{"0 2 * * *", time.Hour, ""},
		{"0 30 2 * * *", time.Hour, ""},
	} {
		w := jobs.Window{From: from, Until: from.Add(30 * 24 * time.Hour), Recurs: c.recurs, Duration: c.lasts, Reason: "x"}
		got := w.Validate()["recurs"]
		if (c.says == "") != (got == "") || !strings.Contains(got, c.says) {
			t.Errorf("%s for %s: %q; want %q", c.recurs, c.lasts, got, c.says)
		}
	}
	for sched, ok := range map[string]bool{"* * * * * *": false, "*/30 * * * * *": false, "every 30s": false, "0 * * * * *": true, "30 0 9 * * *": true, "every 1m": true} {
		err := jobs.Job{Name: "x", Schedule: sched}.Validate()
		if ok != (err == nil) {
			t.Errorf("a job on %q: %v; want accepted %v", sched, err, ok)
		}
	}
}
