package otlp

import (
	"sync"
	"time"
)

type seenKey struct{ app, id string }

// counted is who counted an invocation, and how.
type counted struct {
	export string
	signal Signal
	failed bool
}

// Seen remembers which export counted each invocation, so that an
// invocation the host sent as a span and as a log record counts once,
// while a retried export (the same bytes again) writes its rows again: the
// first attempt may not have been stored.
//
// It is this instance's memory, kept in two generations (an id is known
// for between Keep and twice Keep) and bounded in bytes: ids are at most
// MaxID bytes, and only invocations ingest accepted are remembered. An
// export retried or its twin signal sent to another Fusebox instance is
// handled by the rows' writer and by the per-function signal rule instead
// (ingest.Exports).
type Seen struct {
	Keep     time.Duration // default 10 minutes
	MaxBytes int           // per generation; default 32 MiB

	mu       sync.Mutex
	cur, old map[seenKey]counted
	curBytes int
	started  time.Time
}

// entryBytes is what one remembered id costs, map overhead included: the
// key's two strings, the export's string header (its bytes are shared by
// every id of the export) and the bucket's share.
func entryBytes(k seenKey) int { return len(k.app) + len(k.id) + 3*16 + 16 + 32 }

// Bytes is what the ids held cost, both generations.
func (s *Seen) Bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.curBytes
	for k := range s.old {
		n += entryBytes(k)
	}
	return n
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
	fresh = invs[:0:0]
	here := make(map[seenKey]bool, len(invs)) // the same invocation twice in one export
	for _, inv := range invs {
		if inv.ID != "" {
			k := seenKey{appID, inv.ID}
			if here[k] {
				dropped++
				continue
			}
			here[k] = true
			by, ok := s.cur[k]
			if !ok {
				by, ok = s.old[k]
			}
			missed := by.signal != ExecutedRecord && !by.failed && inv.Signal == ExecutedRecord && inv.Failed
			if ok && by.export != export && !missed {
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
	k := seenKey{appID, inv.ID}
	by, ok := s.cur[k]
	if !ok {
		by, ok = s.old[k]
	}
	return ok && by.signal != ExecutedRecord && !by.failed
}

// Counted remembers that export counted invs.
func (s *Seen) Counted(appID, export string, invs []Invocation, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(now)
	for _, inv := range invs {
		if inv.ID == "" || len(inv.ID) > MaxID {
			continue
		}
		k := seenKey{appID, inv.ID}
		if _, ok := s.cur[k]; !ok {
			s.curBytes += entryBytes(k)
		}
		s.cur[k] = counted{export, inv.Signal, inv.Failed}
		s.rotate(now)
	}
}
