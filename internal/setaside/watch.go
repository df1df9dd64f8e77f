package setaside

import "time"

// Watch is what Fusebox remembers of one set-aside queue between looks:
// what it held, since when it has held anything (the episode), and its
// counts over the last hour, so growth can be told once an episode.
type Watch struct {
	Count  int
	Oldest time.Time // the oldest message's insertion time; zero when empty
	// Expires is when the oldest message expires; zero when empty or
	// never (Storage queues' default time-to-live is 7 days).
	Expires time.Time
	ReadAt  time.Time
	// Episode counts the times the queue went from empty to holding work;
	// notices are owed once per episode and destination.
	Episode int64
	Since   time.Time // when this episode began; zero while empty
	Grew    bool      // this episode's growth notice is owed already
	// ExpiryTold says this episode's notice that the oldest message
	// expires soon is owed already.
	ExpiryTold bool
	Samples    []Sample // at most one a minute, the last hour
}

// Sample is a count at a time.
type Sample struct {
	At    time.Time
	Count int
}

// Change is what a look found worth telling people.
type Change string

// The changes notices are owed for.
const (
	Appeared Change = "appeared" // the queue went from empty to holding work
	Grew     Change = "grew"     // it grew past the app's limit within an hour
	// Expiring: its oldest message expires within ExpiryWarning, and the
	// queue then drops it for good.
	Expiring Change = "expiring"
)

// ExpiryWarning is how long before its oldest message expires a queue's
// people are told, once an episode.
const ExpiryWarning = 24 * time.Hour

// DefaultGrowthLimit is how many messages in an hour make a growth notice
// when the app sets no limit of its own.
const DefaultGrowthLimit = 100

// SampleEvery and Keep bound Samples: one a minute, for an hour.
const (
	SampleEvery = time.Minute
	Keep        = time.Hour
)

// Observe is the rule: given what was remembered and what the queue holds
// now, it returns what to remember and what changed. A queue that holds
// work on the first look starts an episode (it is news to whoever reads
// the notice). Growth is the count now less the least count of the last
// hour, so a backlog that was sent back and filled again counts as growth.
func Observe(prev Watch, count int, oldest, now time.Time, growthLimit int) (Watch, []Change) {
	if growthLimit <= 0 {
		growthLimit = DefaultGrowthLimit
	}
	next := prev
	next.Count, next.Oldest, next.ReadAt = max(count, 0), oldest, now
	var changes []Change
	switch {
	case next.Count == 0:
		next.Since, next.Grew, next.ExpiryTold = time.Time{}, false, false
	case prev.Count == 0 || prev.Since.IsZero():
		next.Episode++
		next.Since, next.Grew, next.ExpiryTold = now, false, false
		changes = append(changes, Appeared)
	}
	next.Samples = record(prev.Samples, Sample{At: now, Count: next.Count})
	if next.Count > 0 && !next.Grew && next.Growth(now) >= growthLimit {
		next.Grew = true
		changes = append(changes, Grew)
	}
	return next, changes
}

// Growth is how much the queue grew within the hour before now: the count
// now less the least count seen in that hour (never below zero).
func (w Watch) Growth(now time.Time) int {
	least := w.Count
	for _, s := range w.Samples {
		if now.Sub(s.At) <= Keep && s.Count < least {
			least = s.Count
		}
	}
	return w.Count - least
}

// record appends s when the last sample is a minute old (a look in
// between only moves the newest one when it is lower, so the hour's low
// is kept) and drops what is older than Keep.
func record(samples []Sample, s Sample) []Sample {
	out := make([]Sample, 0, len(samples)+1)
	for _, old := range samples {
		if s.At.Sub(old.At) <= Keep && !old.At.After(s.At) {
			out = append(out, old)
		}
	}
	if n := len(out); n > 0 && s.At.Sub(out[n-1].At) < SampleEvery {
		if s.Count < out[n-1].Count {
			out[n-1].Count = s.Count
		}
		return out
	}
	return append(out, s)
}

// NeverExpires says whether a message's expiry time is the service's
// "never" (a time-to-live of -1 reads as the end of year 9999).
func NeverExpires(t time.Time) bool { return t.Year() >= 9999 }

// Expiry records when the oldest message expires (zero: never, or empty)
// and says Expiring, once an episode, when that is within ExpiryWarning
// of now and not yet past.
func Expiry(w Watch, expires, now time.Time) (Watch, []Change) {
	w.Expires = expires
	if w.Count == 0 || expires.IsZero() || w.ExpiryTold || !expires.After(now) || expires.Sub(now) > ExpiryWarning {
		return w, nil
	}
	w.ExpiryTold = true
	return w, []Change{Expiring}
}
