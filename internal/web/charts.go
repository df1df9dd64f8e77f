package web

import (
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// sparks turns minute counts into one series per circuit: the last 60
// minutes before now, oldest first.
func sparks(rates []circuit.MinuteCount, now time.Time) map[string][]int {
	out := map[string][]int{}
	end := now.UTC().Truncate(time.Minute)
	for _, r := range rates {
		i := 59 - int(end.Sub(r.Minute)/time.Minute)
		if i < 0 || i > 59 {
			continue
		}
		s, ok := out[r.Circuit]
		if !ok {
			s = make([]int, 60)
			out[r.Circuit] = s
		}
		s[i] += r.Count
	}
	return out
}

// dayBars buckets one circuit's failures into 96 quarters of an hour
// ending now, oldest first: the roll-up's minutes before recentFrom, and
// since then its own rows among the window's (rows, of every circuit).
func dayBars(rates []circuit.MinuteCount, rows []circuit.FailureRow, id string, recentFrom, now time.Time) []int {
	bars := make([]int, 96)
	add := func(at time.Time, n int) {
		ago := now.Sub(at)
		i := 95 - int(ago/(15*time.Minute))
		if ago >= 0 && i >= 0 && i < 96 {
			bars[i] += n
		}
	}
	for _, r := range rates {
		if r.Minute.Before(recentFrom) {
			add(r.Minute, r.Count)
		}
	}
	// The window's rows are read in place: a copy of the circuit's (a
	// few hundred bytes each, 10,000 in a busy window) cost a view more
	// than everything else it does.
	for _, r := range circuit.Countable(rows, now) {
		if r.Circuit == id && !r.Second.Before(recentFrom) {
			add(r.Second, r.Count)
		}
	}
	return bars
}

// rolledUpTo is where the minute roll-up (storage.Rates.RollupRecent,
// every 30 s, the last two whole minutes) may not have reached yet at now.
func rolledUpTo(now time.Time) time.Time {
	return now.Add(-2 * time.Minute).Truncate(time.Minute)
}

// windowBars buckets a circuit's failure rows across its window ending now
// into at most 60 bars, oldest first.
func windowBars(rows []circuit.FailureRow, id string, window time.Duration, now time.Time) []int {
	n := min(int(window/time.Second), 60)
	n = max(n, 1)
	bucket := window / time.Duration(n)
	bars := make([]int, n)
	for _, r := range rows {
		if r.Circuit != id {
			continue
		}
		ago := now.Sub(r.Second)
		if ago < 0 || ago >= window {
			continue
		}
		bars[n-1-int(ago/bucket)] += r.Count
	}
	return bars
}
