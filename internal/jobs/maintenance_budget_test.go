package jobs

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// nextShown is how many openings a window's page or API answer lists
// (Window.Next(now, 5) at most): one listing may cost that many
// evaluations.
const nextShown = 5

// stepsKnown names the bug that explains an over-budget walk of s made of
// steps (each one Next or Prev, from [0] to [1]), or "": found false
// says the last step found nothing and walked the whole search.
func stepsKnown(s Schedule, steps [][2]time.Time, found bool) string {
	switch {
	case s == nil:
		return ""
	case !found:
		return knownWalk(s, time.Time{}, time.Time{}, false)
	}
	for _, st := range steps {
		if why := knownWalk(s, st[0], st[1], true); why != "" {
			return why
		}
	}
	return ""
}

// openingSteps walks s as OpeningsProblem does from from, for openings
// lasting lasts.
func openingSteps(s Schedule, from time.Time, lasts time.Duration) ([][2]time.Time, bool) {
	prev, ok := s.Next(from)
	if !ok {
		return nil, false
	}
	steps := [][2]time.Time{{from, prev}}
	for range gapsLooked {
		next, ok := s.Next(prev.Add(time.Second))
		if !ok {
			return steps, false
		}
		steps = append(steps, [2]time.Time{prev, next})
		if gap := next.Sub(prev); gap < time.Minute || gap < lasts {
			break
		}
		prev = next
	}
	return steps, true
}

// nextSteps walks w's schedule as Window.Next(now, n) does.
func nextSteps(w Window, s Schedule, now time.Time, n int) ([][2]time.Time, bool) {
	var steps [][2]time.Time
	from := now.Add(-w.Duration + time.Nanosecond)
	if from.Before(w.From) {
		from = w.From
	}
	for range n {
		at, ok := s.Next(from)
		if !ok {
			return steps, false
		}
		steps = append(steps, [2]time.Time{from, at})
		if !at.Before(w.Until) {
			break
		}
		from = at.Add(time.Second)
	}
	return steps, true
}

// A maintenance window costs what the budget allows to check, and to
// answer whether it is open and when it opens next, whatever its
// schedule, zone and period, at any instant. Durations are read as the
// API and form read them.
func FuzzMaintenanceWindowBudget(f *testing.F) {
	skipUnjudged(f)
	edges := edgeInstants()
	for _, zone := range dstZones {
		for i, t := range edges[zone] {
			f.Add("30 2 * * *", zone, "2h", fuzzAt(t.AddDate(0, 0, -1)), int64(10*365*24*time.Hour), fuzzAt(t))
			if i%3 == 1 { // the change itself
				f.Add("* * * * *", zone, "1m", fuzzAt(t.Add(-time.Hour)), int64(48*time.Hour), fuzzAt(t))
			}
		}
	}
	leap := time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)
	for _, recurs := range []string{"0 0 29 2 *", "0 0 0 29 2 *", "0 0 0 29 2 1", "0 0 31 2 *", "0 0 0 13 * FRI", longestCron(),
		"* * * * * *", "*/1 * * * * *", "* * * * *", "0 0 1 1 *"} {
		for _, lasts := range []string{"1m", "168h", "24h"} {
			f.Add(recurs, "UTC", lasts, fuzzAt(leap.AddDate(-2, 0, 0)), int64(10*365*24*time.Hour), fuzzAt(leap.Add(-time.Second)))
		}
	}
	for _, recurs := range garbage {
		f.Add(recurs, "Europe/Paris", "1h", fuzzAt(leap), int64(time.Hour), fuzzAt(leap))
	}
	// A one-off window, and periods that end before they start, or last
	// more than seven days.
	f.Add("", "", "", fuzzAt(leap), int64(7*24*time.Hour+1), fuzzAt(leap))
	f.Add("", "", "", fuzzAt(leap), int64(0), fuzzAt(leap))
	f.Add("0 2 * * *", "UTC", "1h", fuzzAt(leap), int64(-time.Hour), fuzzAt(leap))
	f.Add("0 2 * * *", "UTC", "0s", fuzzAt(leap), int64(time.Hour), fuzzAt(leap))
	f.Add("0 2 * * *", "tzdata.zi", "1h", fuzzAt(leap), int64(time.Hour), fuzzAt(leap))
	f.Add(strings.Repeat("0,", 50_000)+"0 2 * * *", "UTC", "1h", fuzzAt(leap), int64(time.Hour), fuzzAt(leap))
	f.Add("every 1h", "UTC", "1m", fuzzAt(leap), int64(time.Hour), fuzzAt(leap))
	f.Fuzz(func(t *testing.T, recurs, zone, lasts string, from, span, now int64) {
		w := Window{From: instant(from), Recurs: recurs, TimeZone: zone, Reason: "deploy 1.4.2"}
		w.Until = w.From.Add(time.Duration(span % int64(11*365*24*time.Hour)))
		if recurs != "" {
			d, err := time.ParseDuration(lasts)
			if err != nil || d <= 0 {
				return // the API refuses it before the window is checked
			}
			w.Duration = d
		}
		what := fmt.Sprintf("window %.60q in %.40q for %s from %s until %s", recurs, zone, w.Duration, w.From.Format(time.RFC3339Nano), w.Until.Format(time.RFC3339Nano))
		var problems map[string]string
		c := measure(parseBudget, parseBytes, func() {
			forgetParsed()
			problems = w.Validate()
		})
		c.check(t, what+": Validate", func() string {
			if why := knownText(recurs, zone)(); why != "" {
				return why
			}
			s, err := w.schedule()
			if err != nil {
				return ""
			}
			steps, found := openingSteps(s, w.From, w.Duration)
			return stepsKnown(s, steps, found)
		})
		if problems != nil {
			return
		}
		at := instant(now)
		s, err := w.schedule()
		if w.Recurring() && err != nil {
			t.Fatalf("%s: valid, but its schedule does not read: %v", what, err)
		}
		var state string
		c = measure(evalBudget, 0, func() { state = w.State(at) })
		c.check(t, fmt.Sprintf("%s: State(%s)", what, at.Format(time.RFC3339Nano)), func() string {
			if s == nil {
				return ""
			}
			prev, ok := s.Prev(at)
			return stepsKnown(s, [][2]time.Time{{prev, at}}, ok)
		})
		var next []time.Time
		c = measure(nextShown*evalBudget, 0, func() { next = w.Next(at, nextShown) })
		c.check(t, fmt.Sprintf("%s: Next(%s, %d)", what, at.Format(time.RFC3339Nano), nextShown), func() string {
			if s == nil {
				return ""
			}
			steps, found := nextSteps(w, s, at, nextShown)
			return stepsKnown(s, steps, found)
		})
		switch state {
		case "ended", "active", "recurring", "upcoming":
		default:
			t.Errorf("%s: State(%s) = %q", what, at, state)
		}
		for i, o := range next {
			if o.Before(w.From) || !o.Before(w.Until) || i > 0 && !next[i-1].Before(o) || len(next) > nextShown {
				t.Errorf("%s: Next(%s, %d) = %v: out of order or period", what, at, nextShown, next)
				break
			}
		}
	})
}
