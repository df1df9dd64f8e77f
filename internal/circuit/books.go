package circuit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
)

// countMargin is how far before the last count the books look again for
// flips decided then and written since.
const countMargin = 10 * time.Second

// books are what the keeper of the evaluator's books stores for the pages
// and metrics: the status, and totals that count each transition once
// across tenures and instances, and each unreadable failure row once.
type books struct {
	store    Stores
	log      *slog.Logger
	identity string

	mu     sync.Mutex
	status Status
	loaded bool        // the stored tally has been read this tenure of the books
	keeper lease.Fence // the books' lease while this instance holds it
	// countedUntil is the time up to which transitions are in the totals.
	countedUntil time.Time
	tenureFrom   time.Time            // the books' tenure counts flips from here on
	counted      map[string]time.Time // flips counted lately, by circuit and episode: a flip at the edge counts once
	rejected     map[string]bool      // unreadable rows already counted, by ID
}

// begin starts a tenure of the evaluator: empty books.
func (b *books) begin() {
	b.mu.Lock()
	b.loaded, b.keeper = false, lease.Fence{}
	b.status = Status{Leader: b.identity, Tally: NewTally()}
	b.mu.Unlock()
}

// keep notes the books' lease of this tick (zero when another instance
// holds it): a new tenure of the books carries the stored totals on.
func (b *books) keep(keeper lease.Fence) {
	b.mu.Lock()
	if keeper.Lease != "" && keeper != b.keeper {
		b.loaded = false
	}
	b.keeper = keeper
	b.mu.Unlock()
}

// reject counts the unreadable rows not counted before. The store names
// every unreadable row each time; each counts once, and rows that left
// the window are forgotten.
func (b *books) reject(rejected []Rejection, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := make(map[string]bool, len(rejected))
	for _, r := range rejected {
		seen[r.ID] = true
		if b.rejected[r.ID] {
			continue
		}
		b.status.Rejected++
		b.status.LastRejected, b.status.RejectedAt = r.ID+": "+r.Reason, now
		b.log.Warn("unreadable failure row skipped", "row", r.ID, "reason", r.Reason)
	}
	b.rejected = seen
}

// load carries on the totals the previous keeper stored, which counted
// the transitions up to its last tick, once a tenure.
func (b *books) load(ctx context.Context, now time.Time) {
	b.mu.Lock()
	loaded := b.loaded
	b.mu.Unlock()
	if loaded {
		return
	}
	prev, err := b.store.Status.Evaluator(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	// With no totals stored, the last minute's transitions are counted.
	b.loaded, b.countedUntil, b.counted = true, now.Add(-time.Minute), map[string]time.Time{}
	// The stored totals name the flips they counted within the look-back,
	// so a new tenure looks back as far as its predecessor did.
	defer func() { b.tenureFrom = b.countedUntil.Add(-countMargin) }()
	if err != nil {
		b.log.Warn("could not read the stored totals; counting from zero", "error", err)
		return
	}
	t := prev.Tally
	t.fill()
	b.status.Tally = t
	if !t.At.IsZero() {
		b.countedUntil = t.At
		for _, key := range t.Counted {
			b.counted[key] = t.At
		}
	}
}

// count adds to the totals every transition made since the books were
// last counted (from that instant on: a flip made in the same instant as
// the last count is counted once, by its episode), by whoever made it
// (this instance's ticks and checks, other instances, operators, links),
// read from the flip logs of the circuits that changed since: by the
// flips' times, so a transition is counted once whichever instance keeps
// the books. circuits are the ones the tick settled, its own transitions
// included.
func (b *books) count(ctx context.Context, circuits []Circuit, now time.Time) {
	b.mu.Lock()
	// A flip carries the time its change was decided, which can be a
	// moment before it was written (a report's check, a paused tick): look
	// back a margin, within this tenure, and count each flip once by its
	// episode.
	since := b.countedUntil.Add(-countMargin)
	if since.Before(b.tenureFrom) {
		since = b.tenureFrom
	}
	b.mu.Unlock()
	for _, c := range circuits {
		if c.ChangedAt.Before(since) {
			continue
		}
		flips, err := b.store.Circuits.Flips(ctx, c.AppID, c.Function, 10)
		if err != nil {
			b.log.Warn("could not read a circuit's flips for the totals", "circuit", c.ID(), "error", err)
			continue
		}
		b.mu.Lock()
		for _, f := range flips {
			key := fmt.Sprintf("%s#%d", c.ID(), f.Episode)
			if f.At.Before(since) || f.At.After(now) || b.counted[key] != (time.Time{}) {
				continue
			}
			b.counted[key] = f.At
			b.status.Tally.Count(c.AppID, f.To, f.Actor)
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.countedUntil = now
	for key, at := range b.counted {
		if at.Before(now.Add(-10 * time.Minute)) {
			delete(b.counted, key)
		}
	}
	b.mu.Unlock()
}

// publish stores the status of the tick that began at began: the keeper
// reports every tick, one small write a second, and every instance's
// pages can tell stalled books within three ticks.
func (b *books) publish(ctx context.Context, settled []Circuit, began, now time.Time) error {
	b.mu.Lock()
	b.status.Tally.Settle(settled, began)
	b.status.Tally.Counted = b.countedSince(began.Add(-countMargin))
	b.status.LastTickAt, b.status.TickDuration = began, now.Sub(began)
	st := b.status
	st.Tally = b.status.Tally.Clone()
	b.mu.Unlock()
	return b.store.Status.PutEvaluator(ctx, st)
}

// countedSince names the flips counted that were made at from or later,
// sorted; call with b.mu held.
func (b *books) countedSince(from time.Time) []string {
	var keys []string
	for key, at := range b.counted {
		if !at.Before(from) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}
