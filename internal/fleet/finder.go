package fleet

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// DefaultMaxAge is how long a survey is shown before ARM is asked again.
const DefaultMaxAge = 5 * time.Minute

// Finder keeps the last survey of the subscriptions, so a page costs no
// ARM call: a survey older than MaxAge is taken again by the first reader,
// and the others are shown the last one meanwhile rather than wait.
type Finder struct {
	// Survey lists the subscriptions' function apps (appservice.Discoverer).
	Survey        func(ctx context.Context, subscriptions []string) Survey
	Subscriptions []string
	// Apps lists the registered apps, to mark the sites they guard.
	Apps interface {
		List(context.Context) ([]circuit.App, error)
	}
	MaxAge time.Duration // zero: DefaultMaxAge
	Now    func() time.Time

	surveying sync.Mutex // held while one survey runs
	mu        sync.Mutex
	last      Survey
	at        time.Time
}

// Latest returns the last survey, taken again when it is older than
// MaxAge, its sites marked as guarded by today's registered apps, and
// when it was taken.
func (f *Finder) Latest(ctx context.Context) (Survey, time.Time, error) {
	last, at := f.cached()
	maxAge := f.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if at.IsZero() || f.Now().Sub(at) > maxAge {
		if !at.IsZero() && !f.surveying.TryLock() {
			// Another reader is surveying: show what there is.
			return f.marked(ctx, last, at)
		}
		if at.IsZero() {
			f.surveying.Lock()
		}
		// A reader that waited for the first survey may find it taken.
		if last, at = f.cached(); at.IsZero() || f.Now().Sub(at) > maxAge {
			last, at = f.Survey(context.WithoutCancel(ctx), f.Subscriptions), f.Now()
			f.mu.Lock()
			f.last, f.at = last, at
			f.mu.Unlock()
		}
		f.surveying.Unlock()
	}
	return f.marked(ctx, last, at)
}

func (f *Finder) cached() (Survey, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last, f.at
}

// marked copies the survey and marks its guarded sites.
func (f *Finder) marked(ctx context.Context, s Survey, at time.Time) (Survey, time.Time, error) {
	apps, err := f.Apps.List(ctx)
	if err != nil {
		return Survey{}, at, err
	}
	s.Sites = slices.Clone(s.Sites)
	s.MarkGuarded(apps)
	return s, at, nil
}
