package jobs

import (
	"math/bits"
	"time"
)

// Finding a schedule's next or previous slot walks the calendar field by
// field, never listing slots: its cost does not grow with how often the
// schedule fires (a schedule firing every second costs what a daily one
// does), and months that do not match are skipped whole.

// SearchDays bounds how far Next and Prev look: a schedule that fires
// less often than once in five years never fires, as far as Fusebox is
// concerned (Validate refuses it).
const SearchDays = 5 * 366

// dstMargin is how far past the best slot found on a day whose offset
// changes the walk still looks: a repeated hour's second pass comes up to
// an hour after its first.
const dstMargin = 2 * time.Hour

// Next is the first slot at or after t; false when there is none within
// SearchDays.
func (c *Cron) Next(t time.Time) (time.Time, bool) {
	day := midnight(t.In(c.loc))
	for i := 0; i < SearchDays; i++ {
		if c.month&(1<<uint(day.Month())) == 0 {
			day = dayStart(day.Year(), day.Month()+1, 1, c.loc)
			continue
		}
		if c.dayMatches(day) {
			if at, ok := c.firstInDay(day, t); ok {
				return at, true
			}
		}
		day = c.nextDay(day)
	}
	return time.Time{}, false
}

// domOnly says only the day-of-month field can match a day (both day
// fields combine with AND, or the weekday is any): days between the
// field's values are skipped whole.
func (c *Cron) domOnly() bool { return !c.domStar && (c.dowStar || !c.either) }

// nextDay is the next day that may match: with a day-of-month field that
// decides alone, the next of its values this month, else the first of
// the next month.
func (c *Cron) nextDay(day time.Time) time.Time {
	if !c.domOnly() {
		return dayAfter(day, 1)
	}
	d := nextBit(c.dom, day.Day()+1)
	if d < 0 || d > daysIn(day.Year(), day.Month()) {
		return dayStart(day.Year(), day.Month()+1, 1, c.loc)
	}
	return dayStart(day.Year(), day.Month(), d, c.loc)
}

// prevDay is nextDay backwards.
func (c *Cron) prevDay(day time.Time) time.Time {
	if !c.domOnly() {
		return dayAfter(day, -1)
	}
	d := prevBit(c.dom, min(day.Day()-1, 31))
	if d < 1 {
		return dayAfter(dayStart(day.Year(), day.Month(), 1, c.loc), -1)
	}
	return dayStart(day.Year(), day.Month(), d, c.loc)
}

func daysIn(y int, m time.Month) int { return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day() }

// Prev is the last slot at or before t; false when there is none within
// SearchDays.
func (c *Cron) Prev(t time.Time) (time.Time, bool) {
	day := midnight(t.In(c.loc))
	for i := 0; i < SearchDays; i++ {
		if c.month&(1<<uint(day.Month())) == 0 {
			day = dayAfter(dayStart(day.Year(), day.Month(), 1, c.loc), -1) // the last day of the month before
			continue
		}
		if c.dayMatches(day) {
			if at, ok := c.lastInDay(day, t); ok {
				return at, true
			}
		}
		day = c.prevDay(day)
	}
	return time.Time{}, false
}

func midnight(t time.Time) time.Time {
	return dayStart(t.Year(), t.Month(), t.Day(), t.Location())
}

// dayStart is the first instant of a local date. Where clocks go forward
// at midnight (America/Santiago, Asia/Beirut) midnight does not exist and
// time.Date may answer the evening before; the day then starts at 01:00.
// Stepping days by the date it answers would stand still on that date.
func dayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if _, _, got := t.Date(); got != time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Day() {
		t = time.Date(y, m, d, 1, 0, 0, 0, loc)
	}
	return t
}

// dayAfter is the start of the local date after day's.
func dayAfter(day time.Time, n int) time.Time {
	y, m, d := day.Date()
	civil := time.Date(y, m, d+n, 12, 0, 0, 0, time.UTC)
	return dayStart(civil.Year(), civil.Month(), civil.Day(), day.Location())
}

// plain says the day has no offset change: its wall times are offsets
// from midnight.
func plain(day, next time.Time) bool {
	_, end := day.ZoneBounds()
	return day.Hour() == 0 && day.Minute() == 0 && (end.IsZero() || !end.Before(next))
}

// nextBit is the lowest set bit of x at or above i, or -1.
func nextBit(x uint64, i int) int {
	if i > 63 {
		return -1
	}
	x &^= 1<<uint(i) - 1
	if x == 0 {
		return -1
	}
	return bits.TrailingZeros64(x)
}

// prevBit is the highest set bit of x at or below i, or -1.
func prevBit(x uint64, i int) int {
	if i < 0 {
		return -1
	}
	if i < 63 {
		x &= 1<<uint(i+1) - 1
	}
	if x == 0 {
		return -1
	}
	return 63 - bits.LeadingZeros64(x)
}

// firstInDay is the day's first slot at or after from.
func (c *Cron) firstInDay(day, from time.Time) (time.Time, bool) {
	next := dayAfter(day, 1)
	if !next.After(from) {
		return time.Time{}, false
	}
	if !plain(day, next) {
		return c.firstOnChangeDay(day, from)
	}
	need := 0
	if from.After(day) {
		off := from.Sub(day)
		need = int((off + time.Second - 1) / time.Second) // whole seconds, rounded up
	}
	h0, m0, s0 := need/3600, need%3600/60, need%60
	for h := nextBit(c.hour, h0); h >= 0 && h < 24; h = nextBit(c.hour, h+1) {
		mFrom := 0
		if h == h0 {
			mFrom = m0
		}
		for mi := nextBit(c.min, mFrom); mi >= 0 && mi < 60; mi = nextBit(c.min, mi+1) {
			sFrom := 0
			if h == h0 && mi == m0 {
				sFrom = s0
			}
			if s := nextBit(c.sec, sFrom); s >= 0 && s < 60 {
				return day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(s)*time.Second), true
			}
		}
	}
	return time.Time{}, false
}

// lastInDay is the day's last slot at or before t.
func (c *Cron) lastInDay(day, t time.Time) (time.Time, bool) {
	if t.Before(day) {
		return time.Time{}, false
	}
	next := dayAfter(day, 1)
	if !plain(day, next) {
		return c.lastOnChangeDay(day, t)
	}
	have := 86399
	if t.Before(next) {
		have = int(t.Sub(day) / time.Second)
	}
	h0, m0, s0 := have/3600, have%3600/60, have%60
	for h := prevBit(c.hour, h0); h >= 0; h = prevBit(c.hour, h-1) {
		mTo := 59
		if h == h0 {
			mTo = m0
		}
		for mi := prevBit(c.min, mTo); mi >= 0; mi = prevBit(c.min, mi-1) {
			sTo := 59
			if h == h0 && mi == m0 {
				sTo = s0
			}
			if s := prevBit(c.sec, sTo); s >= 0 {
				return day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(s)*time.Second), true
			}
		}
	}
	return time.Time{}, false
}

// onChangeDay calls visit with each of the day's slots (wall times that
// exist, and a repeated hour's second pass where the hour field matches
// every hour), in wall-clock order ascending or descending, until visit
// says stop.
func (c *Cron) onChangeDay(day time.Time, descending bool, visit func(time.Time) bool) {
	y, m, d := day.Date()
	h := nextBit(c.hour, 0)
	first := func(x uint64) int { return nextBit(x, 0) }
	after := func(x uint64, i int) int { return nextBit(x, i+1) }
	if descending {
		h = prevBit(c.hour, 23)
		first = func(x uint64) int { return prevBit(x, 59) }
		after = func(x uint64, i int) int { return prevBit(x, i-1) }
	}
	for ; h >= 0 && h < 24; h = after(c.hour, h) {
		for mi := first(c.min); mi >= 0 && mi < 60; mi = after(c.min, mi) {
			for s := first(c.sec); s >= 0 && s < 60; s = after(c.sec, s) {
				t := time.Date(y, m, d, h, mi, s, 0, c.loc)
				if t.Hour() != h || t.Minute() != mi || t.Day() != d {
					continue // this wall time does not exist today
				}
				a, b := occurrences(t)
				if !visit(a) {
					return
				}
				if c.allHours && !b.IsZero() && !visit(b) {
					return
				}
			}
		}
	}
}

func (c *Cron) firstOnChangeDay(day, from time.Time) (time.Time, bool) {
	var best time.Time
	c.onChangeDay(day, false, func(t time.Time) bool {
		if !t.Before(from) && (best.IsZero() || t.Before(best)) {
			best = t
		}
		return best.IsZero() || t.Before(best.Add(dstMargin))
	})
	return best, !best.IsZero()
}

func (c *Cron) lastOnChangeDay(day, t time.Time) (time.Time, bool) {
	var best time.Time
	c.onChangeDay(day, true, func(x time.Time) bool {
		if !x.After(t) && (best.IsZero() || x.After(best)) {
			best = x
		}
		return best.IsZero() || x.After(best.Add(-dstMargin))
	})
	return best, !best.IsZero()
}

// Next is the first slot at or after t.
func (e Every) Next(t time.Time) (time.Time, bool) {
	if e.Interval <= 0 {
		return time.Time{}, false
	}
	k := t.Sub(e.Anchor) / e.Interval
	at := e.Anchor.Add(k * e.Interval)
	for at.Before(t) {
		at = at.Add(e.Interval)
	}
	return at, true
}

// Prev is the last slot at or before t.
func (e Every) Prev(t time.Time) (time.Time, bool) {
	if e.Interval <= 0 {
		return time.Time{}, false
	}
	k := t.Sub(e.Anchor) / e.Interval
	at := e.Anchor.Add(k * e.Interval)
	for at.After(t) {
		at = at.Add(-e.Interval)
	}
	return at, true
}
