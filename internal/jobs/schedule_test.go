package jobs_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := jobs.LoadZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestDaylightSavingBoundaries(t *testing.T) {
	tests := []struct {
		name     string
		zone     string
		expr     string
		from, to string // local wall times, in zone
		want     []string
	}{
		// Berlin springs forward at 02:00 → 03:00 on 29 March 2026: 02:30 does not exist.
		{"Berlin spring: the missing slot is not a slot", "Europe/Berlin", "0 30 2 * * *", "2026-03-28 00:00", "2026-03-31 00:00",
			[]string{"2026-03-28 02:30 +0100", "2026-03-30 02:30 +0200"}},
		// Berlin falls back at 03:00 → 02:00 on 25 October 2026: 02:30 happens twice, one slot.
		{"Berlin autumn: a daily slot in the repeated hour runs once", "Europe/Berlin", "0 30 2 * * *", "2026-10-25 00:00", "2026-10-26 00:00",
			[]string{"2026-10-25 02:30 +0200"}},
		{"Berlin autumn: an every-hour schedule fires in both passes", "Europe/Berlin", "0 30 * * * *", "2026-10-25 01:00", "2026-10-25 04:00",
			[]string{"2026-10-25 01:30 +0200", "2026-10-25 02:30 +0200", "2026-10-25 02:30 +0100", "2026-10-25 03:30 +0100"}},
		// New York: 8 March 2026 02:00 → 03:00; 1 November 2026 02:00 → 01:00.
		{"New York spring, five fields", "America/New_York", "15 2 * * *", "2026-03-07 00:00", "2026-03-10 00:00",
			[]string{"2026-03-07 02:15 -0500", "2026-03-09 02:15 -0400"}},
		{"New York autumn, 01:15 once", "America/New_York", "15 1 * * *", "2026-11-01 00:00", "2026-11-02 00:00",
			[]string{"2026-11-01 01:15 -0400"}},
		{"New York autumn, every 20 minutes twice through 01:xx", "America/New_York", "*/20 * * * *", "2026-11-01 00:50", "2026-11-01 02:10",
			[]string{"2026-11-01 01:00 -0400", "2026-11-01 01:20 -0400", "2026-11-01 01:40 -0400",
				"2026-11-01 01:00 -0500", "2026-11-01 01:20 -0500", "2026-11-01 01:40 -0500", "2026-11-01 02:00 -0500"}},
		// Tokyo has no daylight saving: every day has its 01:00.
		{"Tokyo nightly summary", "Tokyo Standard Time", "0 0 1 * * *", "2026-03-28 00:00", "2026-03-31 00:00",
			[]string{"2026-03-28 01:00 +0900", "2026-03-29 01:00 +0900", "2026-03-30 01:00 +0900"}},
		{"Tokyo weekdays at 07:00", "Asia/Tokyo", "0 0 7 * * MON-FRI", "2026-11-27 00:00", "2026-12-01 00:00",
			[]string{"2026-11-27 07:00 +0900", "2026-11-30 07:00 +0900"}},
	}
	const layout = "2006-01-02 15:04"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := zone(t, tt.zone)
			c, err := jobs.ParseCron(tt.expr, loc)
			if err != nil {
				t.Fatal(err)
			}
			from, _ := time.ParseInLocation(layout, tt.from, loc)
			to, _ := time.ParseInLocation(layout, tt.to, loc)
			var got []string
			for _, s := range c.Slots(from, to) {
				got = append(got, s.In(loc).Format("2006-01-02 15:04 -0700"))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("slots\n got  %v\n want %v", got, tt.want)
			}
		})
	}
}

// brute walks every 30 seconds of [from, to) and keeps the instants whose
// wall time matches, applying the repeated-hour rule from first principles.
func brute(expr string, loc *time.Location, from, to time.Time) []time.Time {
	fields := strings.Fields(expr)
	five := len(fields) == 5
	if five {
		fields = append([]string{"0"}, fields...)
	}
	match := func(spec string, v, lo, hi int) bool {
		for _, part := range strings.Split(spec, ",") {
			r, step, hasStep := strings.Cut(part, "/")
			a, b := lo, hi
			switch {
			case r == "*":
			case strings.Contains(r, "-"):
				x, y, _ := strings.Cut(r, "-")
				a, b = num(x), num(y)
			default:
				a = num(r)
				b = a
				if hasStep {
					b = hi
				}
			}
			n := 1
			if hasStep {
				n = num(step)
			}
			for w := a; w <= b; w += n {
				if w == v || (hi == 6 && w == 7 && v == 0) {
					return true
				}
			}
		}
		return false
	}
	var out []time.Time
	for x := from; x.Before(to); x = x.Add(30 * time.Second) {
		l := x.In(loc)
		if !match(fields[0], l.Second(), 0, 59) || !match(fields[1], l.Minute(), 0, 59) || !match(fields[2], l.Hour(), 0, 23) || !match(fields[4], int(l.Month()), 1, 12) {
			continue
		}
		dom, dow := match(fields[3], l.Day(), 1, 31), match(fields[5], int(l.Weekday()), 0, 6)
		domStar, dowStar := fields[3] == "*", fields[5] == "*"
		var day bool
		switch {
		case domStar && dowStar:
			day = true
		case domStar:
			day = dow
		case dowStar:
			day = dom
		case five:
			day = dom || dow
		default:
			day = dom && dow
		}
		if !day {
			continue
		}
		// The second pass of a repeated wall time counts only for schedules
		// that match every hour.
		for _, back := range []time.Duration{time.Hour, 30 * time.Minute} {
			if e := x.Add(-back).In(loc); e.Hour() == l.Hour() && e.Minute() == l.Minute() && e.Second() == l.Second() && e.Day() == l.Day() {
				if fields[2] != "*" {
					day = false
				}
			}
		}
		if day {
			out = append(out, x)
		}
	}
	return out
}

func num(s string) int {
	names := map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6, "MAR": 3, "OCT": 10, "NOV": 11}
	if v, ok := names[s]; ok {
		return v
	}
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

func TestSlotsAgreeWithABruteForceWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	zones := []string{"Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Lord_Howe", "UTC"}
	starts := []string{"2026-03-07T12:00:00Z", "2026-03-28T12:00:00Z", "2026-10-24T12:00:00Z", "2026-10-31T12:00:00Z", "2026-04-04T00:00:00Z", "2026-06-15T00:00:00Z"}
	for i := range 60 {
		expr := strings.Join([]string{
			pick("0", "30", "0,30"), pick("*/7", "0", "30", "*", "10-20", "15,45"), pick("*", "2", "1-3", "*/5", "0,2,23", "1"),
			pick("*", "*", "1", "15", "1-7"), pick("*", "*", "3", "10,11", "MAR"), pick("*", "*", "0", "1-5", "SUN", "6"),
		}, " ")
		if rng.IntN(3) == 0 {
			expr = strings.Join(strings.Fields(expr)[1:], " ") // five fields
		}
		loc := zone(t, zones[rng.IntN(len(zones))])
		from, _ := time.Parse(time.RFC3339, starts[rng.IntN(len(starts))])
		to := from.Add(48 * time.Hour)
		c, err := jobs.ParseCron(expr, loc)
		if err != nil {
			t.Fatalf("case %d: %q: %v", i, expr, err)
		}
		got, want := c.Slots(from, to), brute(expr, loc, from, to)
		if !slices.EqualFunc(got, want, func(a, b time.Time) bool { return a.Equal(b) }) {
			t.Errorf("case %d: %q in %s from %s: %d slots, brute force %d\n got  %v\n want %v", i, expr, loc, from, len(got), len(want), got, want)
		}
	}
}

func TestBadExpressionsAreExplained(t *testing.T) {
	tests := map[string]string{
		"* * * *":       "has 4 fields",
		"0 61 * * * *":  "minute field \"61\": 61 is outside 0-59",
		"0 0 25 * * *":  "hour field \"25\"",
		"0 0 0 32 * *":  "day of month field \"32\"",
		"0 0 0 * FOO *": "\"FOO\" is not a number or a name such as JAN",
		"0 0 0 * * 1-9": "day of week field \"1-9\"",
		"0 */0 * * * *": "the step after / must be a positive whole number",
		"0 0 5-1 * * *": "runs backwards",
	}
	for expr, want := range tests {
		_, err := jobs.ParseCron(expr, time.UTC)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want it to say %q", expr, err, want)
		}
	}
	if _, err := jobs.LoadZone("Mars/Olympus"); err == nil || !strings.Contains(err.Error(), "IANA name") {
		t.Errorf("unknown zone: %v", err)
	}
}

func TestEvery(t *testing.T) {
	anchor := time.Date(2026, 11, 30, 9, 0, 7, 0, time.UTC)
	got := jobs.Every{Interval: 15 * time.Minute, Anchor: anchor}.Slots(anchor.Add(time.Minute), anchor.Add(46*time.Minute))
	want := []time.Time{anchor.Add(15 * time.Minute), anchor.Add(30 * time.Minute), anchor.Add(45 * time.Minute)}
	if !slices.EqualFunc(got, want, func(a, b time.Time) bool { return a.Equal(b) }) {
		t.Errorf("got %v, want %v", got, want)
	}
}
