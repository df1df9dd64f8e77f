package otlp

import (
	"hash/maphash"
	"sync"
	"time"
)

// seenKey names an invocation of an app by a hash of the two: 128 bits
// from two per-process seeds, so a sender cannot aim a collision at
// another app's invocation. Keys and values hold no pointer, so a
// generation of a few hundred thousand ids costs the garbage collector
// nothing to scan.
type seenKey [2]uint64

// counted is who counted an invocation, and how: the export by a hash of
// its key.
type counted struct {
	export uint64
	signal int8 // a Signal
	failed bool
}

// Seen is this instance's one record of what apps exported: which export
// counted each invocation, and when each function's signals last arrived,
// here or on another instance (read from its arrival rows). Judge decides
// from it which invocations of an export count: an invocation the host
// sent as a span and as a log record counts once, a function counts by the
// best signal that tells of it, and a retried export (the same bytes
// again) writes its rows again, as the first attempt may not have been
// stored.
//
// Invocations are kept in two generations (an id is known for between
// Keep and twice Keep) and bounded in bytes: only invocations ingest
// accepted are remembered, each at a fixed cost whatever its id's length.
// Signals are kept per app and function, at most maxSignals of them. An
// export retried or its twin signal sent to another Fusebox instance is
// handled by the rows' writer and by the per-function signal rule instead.
type Seen struct {
	Keep     time.Duration // default 10 minutes
	MaxBytes int           // per generation; default 32 MiB

	mu       sync.Mutex
	cur, old map[seenKey]counted
	here     map[seenKey]bool // Judge's, between two calls always empty
	curBytes int
	started  time.Time
	signals  map[signalKey]time.Time // a function's signal -> when it last arrived, on any instance
	read     map[string]time.Time    // app -> when the other instances' rows were last read for it
	covered  map[string]time.Time    // app -> when the other instances' rows of the last Quiet were read whole
	resets   int                     // how often signals were forgotten at their bound
}

var seenSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(appID, id string) seenKey {
	var k seenKey
	for i, seed := range seenSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_, _ = h.WriteString(appID)
		_ = h.WriteByte(0)
		_, _ = h.WriteString(id)
		k[i] = h.Sum64()
	}
	return k
}

func exportOf(export string) uint64 { return maphash.String(seenSeeds[0], export) }

// entryBytes is what one remembered id costs at most, map overhead
// included: a slot of key and value (32 bytes) with its control byte, in
// a table between 7/16 full (just grown) and 7/8 (TestSeenEntryBytes).
const entryBytes = 80

// Bytes is what the ids held cost, both generations.
func (s *Seen) Bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.curBytes + len(s.old)*entryBytes
}

func (s *Seen) rotate(now time.Time) {
	keep, max := s.Keep, s.MaxBytes
	if keep <= 0 {
		keep = 10 * time.Minute
	}
	if max <= 0 {
		max = 32 << 20
	}
	switch {
	case s.cur == nil || now.Sub(s.started) >= 2*keep:
		s.old, s.cur, s.curBytes, s.started = nil, map[seenKey]counted{}, 0, now
	case now.Sub(s.started) >= keep || s.curBytes >= max:
		s.old, s.cur, s.curBytes, s.started = s.cur, map[seenKey]counted{}, 0, now
	}
}

// lookup is who counted the invocation of key k, if any did.
func (s *Seen) lookup(k seenKey) (counted, bool) {
	by, ok := s.cur[k]
	if !ok {
		by, ok = s.old[k]
	}
	return by, ok
}

// Counted remembers that export counted invs.
func (s *Seen) Counted(appID, export string, invs []Invocation, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(now)
	this := exportOf(export)
	for _, inv := range invs {
		if inv.ID == "" || len(inv.ID) > MaxID {
			continue
		}
		k := inv.seen
		if k == (seenKey{}) {
			k = keyOf(appID, inv.ID)
		}
		n := len(s.cur)
		s.cur[k] = counted{this, int8(inv.Signal), inv.Failed}
		if len(s.cur) > n {
			s.curBytes += entryBytes
			s.rotate(now)
		}
	}
}
