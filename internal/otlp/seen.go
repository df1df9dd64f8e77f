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

// Seen remembers which export counted each invocation, so that an
// invocation the host sent as a span and as a log record counts once,
// while a retried export (the same bytes again) writes its rows again: the
// first attempt may not have been stored.
//
// It is this instance's memory, kept in two generations (an id is known
// for between Keep and twice Keep) and bounded in bytes: only invocations
// ingest accepted are remembered, each at a fixed cost whatever its id's
// length. An export retried or its twin signal sent to another Fusebox
// instance is handled by the rows' writer and by the per-function signal
// rule instead (ingest.Exports).
type Seen struct {
	Keep     time.Duration // default 10 minutes
	MaxBytes int           // per generation; default 32 MiB

	mu       sync.Mutex
	cur, old map[seenKey]counted
	here     map[seenKey]bool // Fresh's, between two calls always empty
	curBytes int
	started  time.Time
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

// Fresh keeps the invocations no other export counted.
func (s *Seen) Fresh(appID, export string, invs []Invocation, now time.Time) (fresh []Invocation, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(now)
	fresh = make([]Invocation, 0, len(invs))
	// The same invocation twice in one export: one map kept and cleared,
	// under the lock, rather than one made per export.
	if s.here == nil {
		s.here = map[seenKey]bool{}
	}
	here := s.here
	defer clear(here)
	this := exportOf(export)
	for _, inv := range invs {
		if inv.ID != "" {
			k := keyOf(appID, inv.ID)
			inv.seen = k // for Counted, which would hash it again
			if here[k] {
				dropped++
				continue
			}
			here[k] = true
			by, ok := s.cur[k]
			if !ok {
				by, ok = s.old[k]
			}
			missed := Signal(by.signal) != ExecutedRecord && !by.failed && inv.Signal == ExecutedRecord && inv.Failed
			// A span of a call its record counted counts too: the record's
			// row is then left uncounted (circuit.Countable), so the span,
			// which shows successes, decides whichever came first.
			spanAfterRecord := Signal(by.signal) == ExecutedRecord && inv.Signal != ExecutedRecord
			if ok && by.export != this && !missed && !spanAfterRecord {
				dropped++
				continue
			}
		}
		fresh = append(fresh, inv)
	}
	return fresh, dropped
}

// MissedFailure says whether inv, a failed Executed record, is of an
// invocation a span counted as succeeded: the host's spans of its function
// do not say when an invocation fails (hosts built before September 2025).
func (s *Seen) MissedFailure(appID string, inv Invocation) bool {
	if !inv.Failed || inv.Signal != ExecutedRecord || inv.ID == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf(appID, inv.ID)
	by, ok := s.cur[k]
	if !ok {
		by, ok = s.old[k]
	}
	return ok && Signal(by.signal) != ExecutedRecord && !by.failed
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
