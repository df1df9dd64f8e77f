package storage

import "time"

// incremental is how Circuits and Failures read only what changed. It
// remembers the newest Timestamp seen and when the service last answered,
// both by the service's own clock (never compared with this machine's),
// and asks for rows modified since the later of them less a margin that
// covers writes committing out of order. Every resync
// period it reads in full, which also drops deleted rows and catches a row
// that committed later than the margin allows.
//
// A read that asks for rows changed since T returns each row once per
// change, so reading the margin again costs bandwidth, never a double
// count: callers key what they keep by row.
type incremental struct {
	margin, resync time.Duration

	newest   time.Time // newest Timestamp seen (service clock)
	servedAt time.Time // the service's clock when the last read was answered
	reading  time.Time // the earliest such time of the read under way
	lastFull time.Time // this machine's clock, when the last full read started
	primed   bool
}

// Margins of the incremental reads; both reread in full every minute.
// docs/storage.md says the same.
//
// A failure row commits with the Timestamp the service gives it and is
// visible at once, so out-of-order commits are milliseconds apart, and the
// Date a read is measured from is truncated to the second, which adds up
// to a second more; the margin is short because under load every second of
// it is reread on every tick (about 1,000 rows in the P1 load). 3 s cost
// P1's worst trip 0.1–0.2 s against 2 s (docs/benchmarks.md).
// Circuits change rarely, so their margin costs nothing and is generous.
// A row whose second lies ahead of Fusebox's clock is not a late commit:
// Failures.Window keeps it until its second comes (see MaxSkew).
const (
	failureMargin     = 2 * time.Second
	circuitMargin     = 10 * time.Second
	incrementalResync = time.Minute
)

func newIncremental(margin time.Duration) incremental {
	return incremental{margin: margin, resync: incrementalResync}
}

// next says whether the read starting at start must be full and, if not,
// the Timestamp from which to read.
func (in *incremental) next(start time.Time) (full bool, since time.Time) {
	if !in.primed || start.Sub(in.lastFull) >= in.resync {
		return true, time.Time{}
	}
	// Every row that committed before the last read was answered, less the
	// margin, was in it. The newest row seen may be much older than that
	// (after a burst of writes nothing else changes), and reading from it
	// would return the whole burst again on every tick.
	base := in.newest
	if in.servedAt.After(base) {
		base = in.servedAt
	}
	return false, base.Add(-in.margin)
}

// served records the service's clock as it answered a page of the read
// under way; the earliest counts, since the read saw every row committed
// before it. A page of a read that then failed leaves an earlier time
// behind, which only makes the next read ask from earlier: safe.
func (in *incremental) served(at time.Time) {
	if in.reading.IsZero() || at.Before(in.reading) {
		in.reading = at
	}
}

// done records a read that started at start.
func (in *incremental) done(full bool, start time.Time) {
	if full {
		in.primed, in.lastFull = true, start
	}
	if !in.reading.IsZero() {
		in.servedAt, in.reading = in.reading, time.Time{}
	}
}

// saw records a row's Timestamp.
func (in *incremental) saw(ts time.Time) {
	if ts.After(in.newest) {
		in.newest = ts
	}
}
