package errgroups

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Grouper groups a circuit's failures as OfCircuit does.
type Grouper interface {
	OfCircuit(ctx context.Context, ci circuit.Circuit, now time.Time, max int) (groups []Group, other int, span string, err error)
}

// Cache keeps groupings for a while, so that the circuit page, the resume
// page, the API and the alerts of one circuit do not each read and fold
// the same rows on every view. An open circuit's window (the one before
// its trip) no longer moves and is kept for Fixed; a closed circuit's
// moves with the clock and is kept for Moving. Rows a late writer adds
// show once an entry expires.
type Cache struct {
	Rows   Rows
	Fixed  time.Duration // default 30s
	Moving time.Duration // default 5s

	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	groups []Group
	other  int
	span   string
	at     time.Time
	ttl    time.Duration
}

// maxCached bounds the entries: past it, the expired go, then all. An
// entry is at most a page's groups (10 × a 1 kB text, 5 instances and 5
// trace ids), so about 12 MB in all; its key is a stored circuit's, never
// a name a request brings before the circuit is found.
const maxCached = 1000

// OfCircuit is OfCircuit of the cache's rows, from the cache while fresh.
func (c *Cache) OfCircuit(ctx context.Context, ci circuit.Circuit, now time.Time, max int) ([]Group, int, string, error) {
	ttl := cmpOr(c.Moving, 5*time.Second)
	if ci.State.TriggerOff() && !ci.ChangedAt.IsZero() {
		ttl = cmpOr(c.Fixed, 30*time.Second)
	}
	key := ci.ID() + "|" + ci.Incarnation + "|" + strconv.FormatInt(ci.Episode, 10) + "|" + ci.State.String() + "|" + strconv.Itoa(max)
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && !now.Before(e.at) && now.Sub(e.at) < e.ttl {
		return slices.Clone(e.groups), e.other, e.span, nil
	}
	groups, other, span, err := OfCircuit(ctx, c.Rows, ci, now, max)
	if err != nil {
		return groups, other, span, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cached{}
	}
	if len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if now.Sub(e.at) >= e.ttl || now.Before(e.at) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCached {
			clear(c.entries)
		}
	}
	c.entries[key] = cached{groups: slices.Clone(groups), other: other, span: span, at: now, ttl: ttl}
	return groups, other, span, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
