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

// Next is the first slot at or after t; false when there is none within
// SearchDays.
func (c *Cron) Next(t time.Time) (time.Time, bool) {
	if c.never() {
		return time.Time{}, false
	}
	day := midnight(t.In(c.loc))
	limit := dayAfter(day, SearchDays)
	for i := 0; i < SearchDays && day.Before(limit); i++ {
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

// never says no date can match: the day-of-month decides alone and
// names no day its months have (31 February, 31 April), so the search
// need not walk five years to find nothing.
func (c *Cron) never() bool {
	if !c.domOnly() {
		return false
	}
	longest := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if c.month&(1<<uint(m)) != 0 && prevBit(c.dom, longest[m]) >= 1 {
			return false
		}
	}
	return true
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
	if c.never() {
		return time.Time{}, false
	}
	day := midnight(t.In(c.loc))
	limit := dayAfter(day, -SearchDays)
	for i := 0; i < SearchDays && day.After(limit); i++ {
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
	if w := c.firstWall(need); w >= 0 {
		return day.Add(time.Duration(w) * time.Second), true
	}
	return time.Time{}, false
}

// firstWall is the first wall time of a matching day, in seconds after
// midnight, at or after need; -1 when none is.
func (c *Cron) firstWall(need int) int {
	if need < 0 {
		need = 0
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
				return h*3600 + mi*60 + s
			}
		}
	}
	return -1
}

// lastWall is the last wall time of a matching day at or before have;
// -1 when none is.
func (c *Cron) lastWall(have int) int {
	if have < 0 {
		return -1
	}
	have = min(have, 86399)
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
				return h*3600 + mi*60 + s
			}
		}
	}
	return -1
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
	if w := c.lastWall(have); w >= 0 {
		return day.Add(time.Duration(w) * time.Second), true
	}
	return time.Time{}, false
}

// A day whose offset changes is cut where it changes into spans of one
// offset each: within a span, wall time is the instant plus the offset,
// so each is searched as a plain day is, and the answer is the best of
// them. A wall time that does not exist (spring forward) lies in no
// span; one that happens twice (fall back) is taken in the later span
// only where the hour field matches every hour (Cron's rules).
type span struct {
	from, to time.Time // [from, to)
	offset   int       // seconds east of UTC
}

// spans cuts the day [day, next) where its offset changes (at most a few
// times: a day has one change, rarely two).
func spans(day, next time.Time) ([4]span, int) {
	var out [4]span
	n := 0
	for at := day; at.Before(next) && n < len(out); n++ {
		_, off := at.Zone()
		_, end := at.ZoneBounds()
		if end.IsZero() || end.After(next) {
			end = next
		}
		out[n] = span{from: at, to: end, offset: off}
		at = end
	}
	return out, n
}

// wallOf is the wall time of instant t in seconds after midnight of the
// civil date whose midnight, read as UTC, is midUTC, at offset off.
func wallOf(t time.Time, midUTC int64, off int) int64 {
	return t.Unix() + int64(off) - midUTC
}

func (c *Cron) firstOnChangeDay(day, from time.Time) (time.Time, bool) {
	y, m, d := day.Date()
	midUTC := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()
	next := dayAfter(day, 1)
	var best time.Time
	seen := int64(-1) << 40 // the latest wall time a span before covered
	sps, n := spans(day, next)
	for _, sp := range sps[:n] {
		lo := wallOf(sp.from, midUTC, sp.offset)
		hi := wallOf(sp.to, midUTC, sp.offset) // exclusive
		if from.After(sp.from) {
			f := from.Unix()
			if from.Nanosecond() > 0 {
				f++
			}
			lo = max(lo, f+int64(sp.offset)-midUTC)
		}
		if !c.allHours {
			lo = max(lo, seen)
		}
		seen = max(seen, hi)
		if lo >= hi || lo >= 86400 {
			continue
		}
		w := c.firstWall(int(max(lo, 0)))
		if w < 0 || int64(w) >= hi {
			continue
		}
		at := time.Unix(midUTC+int64(w)-int64(sp.offset), 0).In(c.loc)
		if best.IsZero() || at.Before(best) {
			best = at
		}
	}
	return best, !best.IsZero()
}

func (c *Cron) lastOnChangeDay(day, t time.Time) (time.Time, bool) {
	y, m, d := day.Date()
	midUTC := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()
	next := dayAfter(day, 1)
	var best time.Time
	seen := int64(-1) << 40
	sps, n := spans(day, next)
	for _, sp := range sps[:n] {
		lo := wallOf(sp.from, midUTC, sp.offset)
		hi := wallOf(sp.to, midUTC, sp.offset) - 1 // inclusive
		if !c.allHours {
			lo = max(lo, seen)
		}
		seen = max(seen, hi+1)
		if t.Before(sp.to) {
			hi = min(hi, t.Unix()+int64(sp.offset)-midUTC)
		}
		if hi < lo || hi < 0 {
			continue
		}
		w := c.lastWall(int(min(hi, 86399)))
		if w < 0 || int64(w) < lo {
			continue
		}
		at := time.Unix(midUTC+int64(w)-int64(sp.offset), 0).In(c.loc)
		if best.IsZero() || at.After(best) {
			best = at
		}
	}
	return best, !best.IsZero()
}

// Next is the first slot at or after t. The count of intervals is taken
// in whole nanoseconds from an anchor in this era (a window has none: the
// Unix epoch), never by stepping: a Duration since the zero time
// saturates at 292 years, and stepping from there took seconds.
func (e Every) Next(t time.Time) (time.Time, bool) {
	a, iv, ok := e.span()
	if !ok {
		return time.Time{}, false
	}
	d := t.UnixNano() - a
	k := d / iv
	if k*iv < d {
		k++
	}
	return time.Unix(0, a+k*iv).In(t.Location()), true
}

// Prev is the last slot at or before t.
func (e Every) Prev(t time.Time) (time.Time, bool) {
	a, iv, ok := e.span()
	if !ok {
		return time.Time{}, false
	}
	d := t.UnixNano() - a
	k := d / iv
	if k*iv > d {
		k--
	}
	return time.Unix(0, a+k*iv).In(t.Location()), true
}

// span is the anchor and interval in nanoseconds; false for no interval.
func (e Every) span() (anchor, interval int64, ok bool) {
	if e.Interval <= 0 {
		return 0, 0, false
	}
	a := e.Anchor
	if a.IsZero() {
		a = time.Unix(0, 0)
	}
	return a.UnixNano(), int64(e.Interval), true
}
