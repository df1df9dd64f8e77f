package jobs

import (
	"context"
	"sync"
	"time"
)

// RunsBetween reads the runs a judgement of a job's slots needs (as
// storage.Runs.Between).
type RunsBetween interface {
	Between(ctx context.Context, jobID string, from, to time.Time, limit int) ([]Run, bool, error)
}

// RunCache keeps, per job, the runs its last week's view read, for as
// long as the job's row has not changed: every run a ping or an
// invocation stores changes the row after it (its last run time), so a
// row at the same version has no run the copy lacks. A page of fifty jobs
// then reads the runs of those that ran since, not of all fifty. Two
// exceptions are bounded: a /start changes the row before its run is
// stored, so a job started within StartSettle is read again each time;
// and a copy is kept at most MaxAge, for writes that change no row (a
// demo's seeding).
type RunCache struct {
	Runs RunsBetween
	// Now is the clock jobs' times are on (a fake one in tests); age is
	// on the real clock.
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]cachedRuns
	runs    int // runs held by entries
}

type cachedRuns struct {
	version  string
	from, to time.Time
	runs     []Run
	more     bool
	readAt   time.Time // real time
}

const (
	// RunCacheMaxAge bounds how long a copy of a job's runs is used.
	RunCacheMaxAge = 15 * time.Second
	// StartSettle is how long after a /start a job's runs are read anew
	// on every view: its row changed before its run was stored.
	StartSettle = 15 * time.Second
	// MaxCachedRuns bounds the runs the cache holds (a minutely job's
	// week is 10,080): about 10 MB.
	MaxCachedRuns = 150_000
	// MaxCachedJobs bounds the jobs held, whatever their runs: a job with
	// none in its week costs an entry too (about 200 bytes).
	MaxCachedJobs = 20_000
)

// Between returns job j's newest limit runs started in [from, to), oldest
// first, from the copy when it still holds, else from Runs.
func (c *RunCache) Between(ctx context.Context, j Job, from, to time.Time, limit int) ([]Run, bool, error) {
	if runs, more, ok := c.lookup(j, from, to, limit); ok {
		return runs, more, nil
	}
	runs, more, err := c.Runs.Between(ctx, j.ID, from, to, limit)
	if err != nil {
		return nil, false, err
	}
	c.keep(j, cachedRuns{version: j.Version, from: from, to: to, runs: runs, more: more, readAt: time.Now()})
	return runs, more, nil
}

func (c *RunCache) lookup(j Job, from, to time.Time, limit int) ([]Run, bool, bool) {
	if j.Version == "" || !j.LastStartAt.IsZero() && c.Now().Sub(j.LastStartAt) < StartSettle {
		return nil, false, false
	}
	c.mu.Lock()
	e, ok := c.entries[j.ID]
	c.mu.Unlock()
	if !ok || e.version != j.Version || time.Since(e.readAt) >= RunCacheMaxAge || from.Before(e.from) || to.Before(e.to) {
		return nil, false, false
	}
	// The row is unchanged, so no run started after e.to: the copy holds
	// every run of [from, to) it held of [e.from, e.to).
	var out []Run
	for _, r := range e.runs {
		if !r.Start.Before(from) && r.Start.Before(to) {
			out = append(out, r)
		}
	}
	// Runs left unread were older than the copy's oldest: still unread
	// only if none of the copy fell out of the window before them.
	more := e.more && len(out) == len(e.runs)
	if len(out) > limit {
		out, more = out[len(out)-limit:], true
	}
	return out, more, true
}

func (c *RunCache) keep(j Job, e cachedRuns) {
	if j.Version == "" || len(e.runs) > MaxCachedRuns/10 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[j.ID]; ok {
		c.runs -= len(old.runs)
	}
	if c.entries == nil || c.runs+len(e.runs) > MaxCachedRuns || len(c.entries) >= MaxCachedJobs {
		c.entries, c.runs = map[string]cachedRuns{}, 0
	}
	c.entries[j.ID] = e
	c.runs += len(e.runs)
}
