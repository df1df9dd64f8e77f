package errortexts

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
// show once an entry expires. An expired entry is still served while one
// read in the background (bounded by Refresh) replaces it, so a view
// waits on a read only when the circuit's episode or state is new to it.
// With Stamps, an expired entry whose rows have not changed since it was
// read is kept without a read: a quiet circuit's 2,000 rows and texts
// were read again every 5 s for the same groups.
type Cache struct {
	Rows    Rows
	Stamps  Stamper       // optional
	Fixed   time.Duration // default 30s
	Moving  time.Duration // default 5s
	Refresh time.Duration // bounds a background read; default 10s

	mu      sync.Mutex
	entries map[string]cached
}

// Stamper says, without a read, what a circuit's failure rows of a span
// are now (storage.Failures, over the rows the evaluator read this
// second); false when it cannot say.
type Stamper interface {
	Stamp(circuitID string, from, to time.Time) (circuit.Stamp, bool)
}

type cached struct {
	groups     []Group
	other      int
	span       string
	at         time.Time
	ttl        time.Duration
	refreshing bool
	// stamp is the rows' stamp taken before the read, when one could be:
	// a change during the read shows as a change at the next check.
	stamp   circuit.Stamp
	stamped bool
}

// stamp is the circuit's rows' stamp for its grouping's span at now.
func (c *Cache) stamp(ci circuit.Circuit, now time.Time) (circuit.Stamp, bool) {
	if c.Stamps == nil {
		return circuit.Stamp{}, false
	}
	from, to, _ := spanOf(ci, now)
	return c.Stamps.Stamp(ci.ID(), from.Truncate(time.Second), to)
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
	switch {
	case ok && !now.Before(e.at) && now.Sub(e.at) < e.ttl:
		c.mu.Unlock()
		return slices.Clone(e.groups), e.other, e.span, nil
	case ok && !now.Before(e.at) && !e.refreshing:
		if s, fresh := c.stamp(ci, now); fresh && e.stamped && s == e.stamp {
			// Stale, but none of its rows changed: kept, unread.
			e.at = now
			c.entries[key] = e
			c.mu.Unlock()
			return slices.Clone(e.groups), e.other, e.span, nil
		}
		// Stale: served as it is, and read again meanwhile.
		e.refreshing = true
		c.entries[key] = e
		c.mu.Unlock()
		go c.refresh(context.WithoutCancel(ctx), key, ci, now, max, ttl)
		return slices.Clone(e.groups), e.other, e.span, nil
	case ok && !now.Before(e.at):
		c.mu.Unlock()
		return slices.Clone(e.groups), e.other, e.span, nil
	}
	c.mu.Unlock()
	stamp, stamped := c.stamp(ci, now)
	groups, other, span, err := OfCircuit(ctx, c.Rows, ci, now, max)
	if err != nil {
		return groups, other, span, err
	}
	c.put(key, cached{groups: slices.Clone(groups), other: other, span: span, at: now, ttl: ttl, stamp: stamp, stamped: stamped}, now)
	return groups, other, span, nil
}

// refresh reads an expired entry again; a failed read leaves the entry to
// be tried again by the next view.
func (c *Cache) refresh(ctx context.Context, key string, ci circuit.Circuit, now time.Time, max int, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, cmpOr(c.Refresh, 10*time.Second))
	defer cancel()
	stamp, stamped := c.stamp(ci, now)
	groups, other, span, err := OfCircuit(ctx, c.Rows, ci, now, max)
	if err != nil {
		c.mu.Lock()
		if e, ok := c.entries[key]; ok {
			e.refreshing = false
			c.entries[key] = e
		}
		c.mu.Unlock()
		return
	}
	c.put(key, cached{groups: slices.Clone(groups), other: other, span: span, at: now, ttl: ttl, stamp: stamp, stamped: stamped}, now)
}

// put keeps an entry, within maxCached.
func (c *Cache) put(key string, e cached, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cached{}
	}
	if len(c.entries) >= maxCached {
		for k, x := range c.entries {
			if (now.Sub(x.at) >= x.ttl || now.Before(x.at)) && !x.refreshing {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCached {
			clear(c.entries)
		}
	}
	c.entries[key] = e
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
