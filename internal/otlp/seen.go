package otlp

import (
	"sync"
	"time"
)

type seenKey struct{ app, id string }

// Seen remembers which export counted each invocation, so that an
// invocation the host sent as a span and as a log record counts once,
// while a retried export (the same bytes again) writes its rows again: the
// first attempt may not have been stored.
//
// It is this instance's memory, kept in two generations (an id is known
// for between Keep and twice Keep, and at most 2×Max ids are held): an
// export retried or its twin signal sent to another Fusebox instance is
// handled by the rows' writer and by the logs-first rule instead
// (ingest.Telemetry).
type Seen struct {
	Keep time.Duration // default 10 minutes
	Max  int           // ids per generation; default 200,000

	mu       sync.Mutex
	cur, old map[seenKey]string // -> the export that counted it
	started  time.Time
}

func (s *Seen) rotate(now time.Time) {
	keep, max := s.Keep, s.Max
	if keep <= 0 {
		keep = 10 * time.Minute
	}
	if max <= 0 {
		max = 200_000
	}
	switch {
	case s.cur == nil || now.Sub(s.started) >= 2*keep:
		s.old, s.cur, s.started = nil, map[seenKey]string{}, now
	case now.Sub(s.started) >= keep || len(s.cur) >= max:
		s.old, s.cur, s.started = s.cur, map[seenKey]string{}, now
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
			if ok && by != export {
				dropped++
				continue
			}
		}
		fresh = append(fresh, inv)
	}
	return fresh, dropped
}

// Counted remembers that export counted invs.
func (s *Seen) Counted(appID, export string, invs []Invocation, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(now)
	for _, inv := range invs {
		if inv.ID != "" {
			s.cur[seenKey{appID, inv.ID}] = export
		}
	}
}
