package jobs

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// MaxScheduleLen bounds a schedule's text, so that parsing one costs
// little whatever a person types (the longest useful NCRONTAB lists
// fit well within it).
const MaxScheduleLen = 256

// Schedule says when a job is expected to run.
type Schedule interface {
	// Slots returns the expected run times in [from, to), in order.
	Slots(from, to time.Time) []time.Time
	// Next is the first slot at or after t, Prev the last at or before
	// it: found field by field, at a cost that does not grow with how
	// often the schedule fires.
	Next(t time.Time) (time.Time, bool)
	Prev(t time.Time) (time.Time, bool)
	// String gives the schedule as written.
	String() string
}

// Cron is a cron expression in a time zone: five fields (minute hour
// day-of-month month day-of-week, as in Unix cron and Healthchecks) or six
// (second first, as in Azure Functions' NCRONTAB).
//
// Fields match local wall-clock time in Location. Two rules decide what
// daylight-saving changes mean, so that gap detection calls nothing missing
// that could not have run:
//   - a wall time that does not exist (spring forward) is no slot;
//   - a wall time that happens twice (fall back) is one slot, at its first
//     occurrence, unless the hour field matches every hour, in which case
//     the schedule fires in both passes of the repeated hour.
//
// When both day fields are restricted, five-field expressions match either
// (Vixie cron), six-field ones both (NCRONTAB, as the Functions host does).
type Cron struct {
	expr     string
	loc      *time.Location
	sec      uint64 // bit i set: second i matches
	min      uint64
	hour     uint64
	dom      uint64 // bits 1..31
	month    uint64 // bits 1..12
	dow      uint64 // bits 0..6, Sunday = 0
	domStar  bool
	dowStar  bool
	allHours bool
	either   bool // day fields combine with OR
}

// fieldSpec describes one cron field.
type fieldSpec struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	secondField = fieldSpec{name: "second", min: 0, max: 59}
	minuteField = fieldSpec{name: "minute", min: 0, max: 59}
	hourField   = fieldSpec{name: "hour", min: 0, max: 23}
	domField    = fieldSpec{name: "day of month", min: 1, max: 31}
	monthField  = fieldSpec{name: "month", min: 1, max: 12, names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}}
	dowField = fieldSpec{name: "day of week", min: 0, max: 7, names: map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}}
)

// ParseCron reads a five- or six-field expression for a time zone.
func ParseCron(expr string, loc *time.Location) (*Cron, error) {
	if len(expr) > MaxScheduleLen {
		return nil, fmt.Errorf("jobs: a schedule is at most %d characters", MaxScheduleLen)
	}
	fields := strings.Fields(expr)
	c := &Cron{expr: strings.Join(fields, " "), loc: loc}
	if loc == nil {
		c.loc = time.UTC
	}
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
		c.either = true
	case 6:
	default:
		return nil, fmt.Errorf("jobs: %q has %d fields; use five (minute hour day month weekday) or six (second first, as Azure timer triggers)", expr, len(fields))
	}
	var err error
	specs := []fieldSpec{secondField, minuteField, hourField, domField, monthField, dowField}
	targets := []*uint64{&c.sec, &c.min, &c.hour, &c.dom, &c.month, &c.dow}
	for i, f := range fields {
		if *targets[i], err = parseField(f, specs[i]); err != nil {
			return nil, err
		}
	}
	if c.dow&(1<<7) != 0 { // 7 is Sunday too
		c.dow = c.dow&^(1<<7) | 1
	}
	c.domStar, c.dowStar = fields[3] == "*" || fields[3] == "?", fields[5] == "*" || fields[5] == "?"
	c.allHours = c.hour == 1<<24-1
	return c, nil
}

func parseField(f string, spec fieldSpec) (uint64, error) {
	var set uint64
	for _, part := range strings.Split(f, ",") {
		bad := func(why string) error {
			return fmt.Errorf("jobs: %s field %q: %s", spec.name, part, why)
		}
		rangePart, stepPart, hasStep := strings.Cut(part, "/")
		lo, hi := spec.min, spec.max
		if spec.name == "day of week" {
			hi = 6
		}
		switch {
		case rangePart == "*" || rangePart == "?":
		case strings.Contains(rangePart, "-"):
			a, b, _ := strings.Cut(rangePart, "-")
			var err error
			if lo, err = value(a, spec); err != nil {
				return 0, bad(err.Error())
			}
			if hi, err = value(b, spec); err != nil {
				return 0, bad(err.Error())
			}
			if lo > hi {
				return 0, bad("the range runs backwards")
			}
		default:
			v, err := value(rangePart, spec)
			if err != nil {
				return 0, bad(err.Error())
			}
			lo, hi = v, v
			if hasStep {
				hi = spec.max
				if spec.name == "day of week" {
					hi = 6
				}
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepPart)
			if err != nil || n < 1 {
				return 0, bad("the step after / must be a positive whole number")
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	if set == 0 {
		return 0, fmt.Errorf("jobs: %s field %q matches nothing", spec.name, f)
	}
	return set, nil
}

func value(s string, spec fieldSpec) (int, error) {
	if v, ok := spec.names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number%s", s, namesHint(spec))
	}
	if v < spec.min || v > spec.max {
		return 0, fmt.Errorf("%d is outside %d-%d", v, spec.min, spec.max)
	}
	return v, nil
}

func namesHint(spec fieldSpec) string {
	if spec.names == nil {
		return ""
	}
	return " or a name such as " + map[string]string{"month": "JAN", "day of week": "MON"}[spec.name]
}

func (c *Cron) String() string { return c.expr }

// Location is the schedule's time zone.
func (c *Cron) Location() *time.Location { return c.loc }

func (c *Cron) dayMatches(t time.Time) bool {
	if c.month&(1<<uint(t.Month())) == 0 {
		return false
	}
	dom, dow := c.dom&(1<<uint(t.Day())) != 0, c.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case c.domStar && c.dowStar:
		return true
	case c.domStar:
		return dow
	case c.dowStar:
		return dom
	case c.either:
		return dom || dow
	}
	return dom && dow
}

// Slots walks the local days of [from, to) and builds each matching wall
// time, skipping those that do not exist and placing repeated ones by the
// rules in the type's comment.
func (c *Cron) Slots(from, to time.Time) []time.Time {
	var out []time.Time
	if !from.Before(to) {
		return nil
	}
	start := from.In(c.loc)
	day := midnight(start)
	hours, mins, secs := setBits(c.hour), setBits(c.min), setBits(c.sec)
	for ; day.Before(to); day = dayAfter(day, 1) {
		if !c.dayMatches(day) {
			continue
		}
		y, m, d := day.Date()
		next := dayAfter(day, 1)
		if _, end := day.ZoneBounds(); day.Hour() == 0 && day.Minute() == 0 && (end.IsZero() || !end.Before(next)) {
			// No offset change today: wall times are plain offsets from
			// midnight, and the day costs one addition per slot.
			whole := !day.Before(from) && !next.After(to)
			if out == nil {
				out = make([]time.Time, 0, min(len(hours)*len(mins)*len(secs)*int(to.Sub(from)/(24*time.Hour)+1), 1<<20))
			}
			for _, h := range hours {
				for _, mi := range mins {
					base := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute)
					for _, s := range secs {
						t := base.Add(time.Duration(s) * time.Second)
						if whole || (!t.Before(from) && t.Before(to)) {
							out = append(out, t)
						}
					}
				}
			}
			continue
		}
		for _, h := range hours {
			for _, mi := range mins {
				for _, s := range secs {
					t := time.Date(y, m, d, h, mi, s, 0, c.loc)
					if t.Hour() != h || t.Minute() != mi || t.Day() != d {
						continue // this wall time does not exist today
					}
					first, second := occurrences(t)
					if !first.Before(from) && first.Before(to) {
						out = append(out, first)
					}
					if c.allHours && !second.IsZero() && !second.Before(from) && second.Before(to) {
						out = append(out, second)
					}
				}
			}
		}
	}
	sortTimes(out)
	return out
}

// occurrences returns the first instant with t's wall time, and the second
// one when that wall time happens twice (a fall-back hour), else zero.
func occurrences(t time.Time) (time.Time, time.Time) {
	wall := func(x time.Time) [3]int { return [3]int{x.Hour(), x.Minute(), x.Second()} }
	for _, d := range []time.Duration{-time.Hour, -30 * time.Minute} {
		if earlier := t.Add(d); wall(earlier) == wall(t) && earlier.Day() == t.Day() {
			return earlier, t
		}
	}
	for _, d := range []time.Duration{time.Hour, 30 * time.Minute} {
		if later := t.Add(d); wall(later) == wall(t) && later.Day() == t.Day() {
			return t, later
		}
	}
	return t, time.Time{}
}

func setBits(x uint64) []int {
	out := make([]int, 0, bits.OnesCount64(x))
	for x != 0 {
		i := bits.TrailingZeros64(x)
		out = append(out, i)
		x &^= 1 << i
	}
	return out
}

func sortTimes(ts []time.Time) {
	// Slots are built in order except around a fall-back hour; an insertion
	// sort is linear on nearly sorted input.
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Before(ts[j-1]); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// Every is a fixed interval, counted from an anchor (the job's creation).
type Every struct {
	Interval time.Duration
	Anchor   time.Time
}

func (e Every) String() string { return "every " + e.Interval.String() }

// Slots returns anchor + k*interval within [from, to).
func (e Every) Slots(from, to time.Time) []time.Time {
	if e.Interval <= 0 || !from.Before(to) {
		return nil
	}
	t, ok := e.Next(from)
	if !ok {
		return nil
	}
	var out []time.Time
	for ; t.Before(to); t = t.Add(e.Interval) {
		out = append(out, t)
	}
	return out
}
