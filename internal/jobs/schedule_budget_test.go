package jobs

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// A price for every stored expression: whatever a person typed, reading
// it costs at most parseBudget and parseBytes, and one evaluation of it
// (a next or previous slot, whether a window is open) at most evalBudget,
// whatever the instant. The fuzz targets hold schedules and maintenance
// windows to it; circuit and teams hold theirs to the same figures.
const (
	parseBudget = time.Millisecond
	parseBytes  = 64 << 10
	evalBudget  = 10 * time.Microsecond
)

// The machine is shared and noisy (other tests, other people's builds:
// a load of 15 on two cores slowed calls three to five times over), so
// the least of several times is the call's own cost. A call is timed up
// to costReps times, stopping at the first time within budget or at one
// 50 times over it; a cost still over budget that no known bug explains
// is timed up to timeReps times more, yielding between calls and
// collecting garbage once, before it fails.
// Allocations are counted for the whole process, the fuzzing engine's
// goroutines included, so a count over budget is taken again, at most
// costReps times, and the least kept.
const (
	costReps = 5
	timeReps = 20
)

// instrumented is how much slower code runs while it is fuzzed: the
// coverage counters made AlertRuleAction 7 times slower under -fuzz, and
// 7 to 15 times in a build with -d=libfuzzer everywhere. Fuzzing judges
// time against the budget times this, so it finds what is grossly over;
// the seeds, run without it (scripts/test.sh), are judged exactly.
const instrumented = 20

// strictBudget makes the costs that a known bug explains fail too:
// FUSEBOX_BUDGET_STRICT=1 go test -run Budget ./internal/jobs.
// logCosts logs every cost (FUSEBOX_BUDGET_LOG=1, with -v).
var (
	strictBudget = os.Getenv("FUSEBOX_BUDGET_STRICT") != ""
	logCosts     = os.Getenv("FUSEBOX_BUDGET_LOG") != ""
)

// judged is false under the race detector, which slows every call many
// times over and makes sync.Pool drop what it holds (regexp and fmt then
// allocate afresh each call): nothing could be judged there, so the
// targets skip. make test runs their seeds again without it.
var judged = !raceBuild()

// skipUnjudged skips a target where nothing would be judged.
func skipUnjudged(f *testing.F) {
	if !judged {
		f.Skip("costs are judged without the race detector")
	}
}

func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// timeBudget is budget as this process judges it: scaled while fuzzing.
func timeBudget(budget time.Duration) time.Duration {
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return instrumented * budget
	}
	return budget
}

// cost is what a call cost, and what it may: the least time of its timed
// calls, and the least its calls allocated.
type cost struct {
	call            func()
	took, budget    time.Duration
	bytes, maxBytes uint64 // maxBytes 0: allocations are not judged
}

// measure calls call for its allocations and its time, as costReps says.
func measure(budget time.Duration, maxBytes uint64, call func()) cost {
	c := cost{call: call, took: math.MaxInt64, budget: timeBudget(budget), bytes: math.MaxUint64, maxBytes: maxBytes}
	var before, after runtime.MemStats
	for range costReps {
		runtime.ReadMemStats(&before)
		start := time.Now()
		call()
		c.took = min(c.took, time.Since(start))
		runtime.ReadMemStats(&after)
		c.bytes = min(c.bytes, after.TotalAlloc-before.TotalAlloc)
		if (maxBytes == 0 || c.bytes <= maxBytes) && c.took <= c.budget || c.took > 50*c.budget {
			break
		}
	}
	return c
}

// retime times c's call again, as timeReps says, for a second at most:
// one call so slow that noise cannot explain it may be a preemption all
// the same.
func (c *cost) retime() {
	for i, start := 0, time.Now(); i < timeReps && c.took > c.budget && time.Since(start) < time.Second; i++ {
		if i == timeReps/2 {
			runtime.GC() // no collection under way taxes the calls left
		}
		runtime.Gosched()
		at := time.Now()
		c.call()
		c.took = min(c.took, time.Since(at))
	}
}

// over says how c is over budget, or nothing.
func (c cost) over() []string {
	var over []string
	if c.took > c.budget {
		over = append(over, fmt.Sprintf("took %s, budget %s", c.took, c.budget))
	}
	if c.maxBytes > 0 && c.bytes > c.maxBytes {
		over = append(over, fmt.Sprintf("allocated %d B, budget %d B", c.bytes, c.maxBytes))
	}
	return over
}

// check fails t when c is over budget, unless known, asked only then,
// names the bug that explains it: that is logged, and fails only with
// strictBudget.
func (c cost) check(t *testing.T, what string, known func() string) {
	t.Helper()
	why := ""
	if len(c.over()) > 0 && known != nil {
		why = known()
	}
	if len(c.over()) > 0 && why == "" {
		c.retime()
	}
	over := c.over()
	switch {
	case len(over) == 0:
		if logCosts {
			t.Logf("%s: %s of %s, %d B of %d B", what, c.took, c.budget, c.bytes, c.maxBytes)
		}
	case why == "":
		t.Error(what + ": " + strings.Join(over, "; "))
	case strictBudget:
		t.Errorf("%s: %s (known: %s)", what, strings.Join(over, "; "), why)
	default:
		t.Logf("%s: %s (known: %s)", what, strings.Join(over, "; "), why)
	}
}

// The bugs that explain costs over budget today, found by these targets
// and reported, not fixed, with them. Each is asked only of a cost over
// budget, so a fix shows as the log line gone; delete the entry with it.
const (
	// Next and Prev step a day at a time through matching months, up to
	// SearchDays steps: a rare day (29 February, Friday the 13th) or none
	// at all (31 February) costs hundreds of steps. (A month skipped is
	// one step, so the search reaches decades ahead, not five years:
	// 0 0 0 29 2 1 finds 2044-02-29 from 2026.)
	knownFarWalk = "Next and Prev step day by day to a far slot (or SearchDays to none)"
	// time.LoadLocation reads any file in the zoneinfo directory a zone
	// names, tzdata.zi (114 kB) included, before finding it is no zone.
	knownZoneFile = "a zone name may name any file of the zoneinfo directory"
)

// knownText names the bug that explains a parse of text over budget.
func knownText(text, zone string) func() string {
	return func() string {
		switch {
		case zone != "" && !strings.Contains(zone, "/") && windowsZones[zone] == "":
			return knownZoneFile
		}
		return ""
	}
}

// knownWalk names the bug that explains an evaluation of s over budget
// that walked from a to b (found false: it found no slot, and walked the
// whole search).
func knownWalk(s Schedule, a, b time.Time, found bool) string {
	if _, ok := s.(*Cron); !ok {
		return ""
	}
	lo, hi := a, b
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	switch {
	case !found || hi.Sub(lo) > 7*24*time.Hour:
		return knownFarWalk
	}
	return ""
}

// forgetParsed empties the parsed schedules, so the next parse is cold.
func forgetParsed() {
	parsed.mu.Lock()
	clear(parsed.m)
	parsed.mu.Unlock()
}

// The fuzzed instants fall in the ten years from 2026.
var (
	instantsFrom = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	instantsSpan = instantsFrom.AddDate(10, 0, 0).Sub(instantsFrom)
)

func instant(at int64) time.Time {
	return instantsFrom.Add(time.Duration((at%int64(instantsSpan) + int64(instantsSpan)) % int64(instantsSpan)))
}

func fuzzAt(t time.Time) int64 { return int64(t.Sub(instantsFrom)) }

// created is when the fuzzed jobs were made: the anchor of "every".
var created = time.Date(2025, 11, 30, 9, 17, 23, 0, time.UTC)

// offsetChangesIn are loc's offset changes in year y.
func offsetChangesIn(loc *time.Location, y int) []time.Time {
	var out []time.Time
	t := time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	for {
		_, end := t.ZoneBounds()
		if end.IsZero() || end.Year() > y {
			return out
		}
		out = append(out, end)
		t = end
	}
}

// edgeInstants are the worst instants around each 2026 offset change of
// the zones known for odd ones: Paris and New York (an hour at 02:00 or
// 03:00), Santiago (at midnight: the day starts at 01:00 in September),
// Lord Howe (half an hour). A change day is the worst for Next late on
// it (the walk starts at the day's first slot) and for Prev early on it.
func edgeInstants() map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, zone := range dstZones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			panic(err)
		}
		for _, change := range offsetChangesIn(loc, 2026) {
			day := midnight(change.In(loc))
			out[zone] = append(out[zone], day.Add(time.Second), change, dayAfter(day, 1).Add(-time.Second))
		}
	}
	return out
}

var dstZones = []string{"Europe/Paris", "America/New_York", "America/Santiago", "Australia/Lord_Howe"}

// list is lo,lo+1,…,hi.
func list(lo, hi int) string {
	var b strings.Builder
	for v := lo; v <= hi; v++ {
		if v > lo {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, v)
	}
	return b.String()
}

// longestCron is the longest schedule ParseCron takes: every second and
// every minute of the first 25 listed, spaced out to MaxScheduleLen.
func longestCron() string {
	expr := list(0, 59) + " " + list(0, 24) + " * * * *"
	return strings.Replace(expr, " ", strings.Repeat(" ", MaxScheduleLen-len(expr)+1), 1)
}

// longestZone is the longest name in the zone database.
const longestZone = "America/Argentina/ComodRivadavia"

// garbage is what a person may type that is no schedule.
var garbage = []string{"", " ", "\x00", "a b c d e", "* * * * * * *", "*/0 * * * *", "60 * * * * *", "-1 * * * *",
	"1--2 * * * *", "5-1 * * * *", ",,,, * * * *", "9999999999999999999 * * * *", "*/99999999999999999999 * * * *",
	"every", "every 0s", "every -1h", "every 999999999999h", "every 1 fortnight", "\u00a0* * * * *", "* * * * \u2028*"}

// A schedule costs what the budget allows to read and to evaluate,
// whatever its text and zone, at any instant. Jobs carry the instant they
// were made (created), which anchors "every".
func FuzzScheduleBudget(f *testing.F) {
	skipUnjudged(f)
	dense := []string{"* * * * * *", "*/1 * * * * *", "* * * * *", "0 * * * * *"}
	edges := edgeInstants()
	for _, zone := range dstZones {
		for _, t := range edges[zone] {
			f.Add("* * * * * *", zone, fuzzAt(t))
			f.Add("* * * * *", zone, fuzzAt(t))
			f.Add("0 30 2 * * *", zone, fuzzAt(t)) // does not exist on a spring day, twice on an autumn one in Paris
			f.Add("0 0 0 * * *", zone, fuzzAt(t))  // Santiago's September midnight does not exist
		}
	}
	leap := []time.Time{time.Date(2028, 2, 28, 23, 59, 59, 0, time.UTC), time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2035, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	rare := []string{"0 0 29 2 *", "0 0 0 29 2 *", "0 0 29 2 1", "0 0 0 29 2 1", "0 0 31 2 *", "0 0 30 2 *", "0 0 0 31 4 *",
		"0 0 0 13 * FRI", "59 59 23 31 12 *", "0 0 1 1 *", "0 0 L * *", longestCron(), "every 1s", "every 1m", "every 2562047h"}
	for _, t := range leap {
		for _, expr := range append(rare, dense...) {
			f.Add(expr, "UTC", fuzzAt(t))
		}
		f.Add("0 0 29 2 *", "Lord Howe Standard Time", fuzzAt(t))
	}
	for _, expr := range dense {
		f.Add(expr, "Europe/Paris", fuzzAt(edges["Europe/Paris"][1]))
	}
	for _, expr := range garbage {
		f.Add(expr, "Europe/Paris", fuzzAt(leap[0]))
	}
	for _, zone := range []string{"Mars/Olympus", "tzdata.zi", "../../etc/passwd", "Local", strings.Repeat("Europe/", 40), "Romance Standard Time",
		longestZone, strings.Repeat("A", MaxZoneLen+1)} {
		f.Add("0 2 * * *", zone, fuzzAt(leap[0]))
	}
	f.Add(longestCron(), longestZone, fuzzAt(edges["America/Santiago"][2]))
	f.Add(longestCron()+" ", "UTC", fuzzAt(leap[0])) // one past the limit
	f.Add(strings.Repeat("0,", 50_000)+"0 * * * *", "UTC", fuzzAt(leap[0]))
	f.Add("every "+strings.Repeat("0", 100_000)+"1h", "UTC", fuzzAt(leap[0]))
	f.Fuzz(func(t *testing.T, expr, zone string, at int64) {
		j := Job{Schedule: expr, TimeZone: zone, CreatedAt: created}
		var s Schedule
		var err error
		c := measure(parseBudget, parseBytes, func() {
			forgetParsed()
			s, err = j.ParseSchedule()
		})
		c.check(t, fmt.Sprintf("ParseSchedule(%.60q in %.40q)", expr, zone), knownText(expr, zone))
		if err != nil {
			return
		}
		now := instant(at)
		var next, prev time.Time
		var nextOK, prevOK bool
		c = measure(evalBudget, 0, func() { next, nextOK = s.Next(now) })
		c.check(t, fmt.Sprintf("%.60q in %q: Next(%s)", expr, zone, now.Format(time.RFC3339Nano)),
			func() string { return knownWalk(s, now, next, nextOK) })
		c = measure(evalBudget, 0, func() { prev, prevOK = s.Prev(now) })
		c.check(t, fmt.Sprintf("%.60q in %q: Prev(%s)", expr, zone, now.Format(time.RFC3339Nano)),
			func() string { return knownWalk(s, now, prev, prevOK) })
		if nextOK && next.Before(now) || prevOK && prev.After(now) {
			t.Errorf("%q in %q at %s: Next %s (%v), Prev %s (%v)", expr, zone, now, next, nextOK, prev, prevOK)
		}
	})
}
