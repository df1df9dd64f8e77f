package web

import (
	"context"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/switches/appservice"
)

// What the pages read of an app through ARM (its functions, its settings
// for a throttle plan) is kept for armFresh per app and shared by the
// views that ask at once: a viewer reloading a circuit page or an app's
// functions page cost an ARM read each time, which Fusebox's identity
// pays for every guarded app. Operators' actions read afresh.
const (
	armFresh      = 30 * time.Second
	armFailedKept = 5 * time.Second // a read that failed is tried again sooner
	maxARMReads   = 10_000          // apps, each one Fusebox registered
)

// recentReads keeps one read per key for a while, and makes callers at
// once share the read under way.
type recentReads[T any] struct {
	mu   sync.Mutex
	kept map[string]*recentRead[T]
}

type recentRead[T any] struct {
	done  chan struct{}
	value T
	err   error
	at    time.Time
}

// get is key's kept value, or read's, run once for everyone asking now;
// a caller whose ctx ends stops waiting, the read goes on for the others.
func (r *recentReads[T]) get(ctx context.Context, key string, read func(context.Context) (T, error)) (T, error) {
	now := time.Now()
	r.mu.Lock()
	if r.kept == nil || len(r.kept) >= maxARMReads {
		r.kept = map[string]*recentRead[T]{}
	}
	e, ok := r.kept[key]
	if ok {
		select {
		case <-e.done:
			keep := armFresh
			if e.err != nil {
				keep = armFailedKept
			}
			if now.Sub(e.at) >= keep {
				ok = false
			}
		default: // under way: wait for it
		}
	}
	if !ok {
		e = &recentRead[T]{done: make(chan struct{})}
		r.kept[key] = e
		r.mu.Unlock()
		// The read is the first caller's, bounded by its deadline.
		e.value, e.err = read(ctx)
		e.at = time.Now()
		close(e.done)
		if ctx.Err() != nil {
			// Cut short by the first caller leaving: not kept.
			r.mu.Lock()
			if r.kept[key] == e {
				delete(r.kept, key)
			}
			r.mu.Unlock()
		}
		return e.value, e.err
	}
	r.mu.Unlock()
	select {
	case <-e.done:
		return e.value, e.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// keptInspector is the discoverer's Inspect, its reads kept per app.
type keptInspector struct {
	d     *appservice.Discoverer
	reads recentReads[fleet.Inspection]
}

func (k *keptInspector) Inspect(ctx context.Context, app circuit.App) (fleet.Inspection, error) {
	return k.reads.get(ctx, app.ID+"|"+app.Site+"|"+app.Slot, func(ctx context.Context) (fleet.Inspection, error) {
		return k.d.Inspect(ctx, app)
	})
}

// keptTriggers is the discoverer's Functions, its lists kept per app.
type keptTriggers struct {
	d     *appservice.Discoverer
	reads recentReads[[]fleet.Function]
}

func (k *keptTriggers) Functions(ctx context.Context, app circuit.App) ([]fleet.Function, error) {
	return k.reads.get(ctx, app.ID+"|"+app.Site+"|"+app.Slot, func(ctx context.Context) ([]fleet.Function, error) {
		return k.d.Functions(ctx, app)
	})
}
