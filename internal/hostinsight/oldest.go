package hostinsight

// The oldest waiting event of each partition of a switched-off trigger,
// read from the hub: what retention drops first.

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

const (
	// oldestKept bounds the arrival times kept: one per partition position
	// read, each some 100 bytes.
	oldestKept = 10000
	// oldestReading bounds the reads carried on past their caller, and
	// oldestPatience how long one is carried on.
	oldestReading  = 256
	oldestPatience = 30 * time.Second
)

// oldestCache keeps arrival times by app, partition and sequence number:
// the event after a checkpoint arrived when it arrived, so a time is read
// once for as long as the checkpoint stays where it is. A read its caller
// stopped waiting for carries on (see read), so a slow hub is not asked
// again from scratch by every page view, each giving up as early.
type oldestCache struct {
	mu      sync.Mutex
	at      map[string]time.Time
	reading map[string]*oldestRead
}

// errStillReading is a read its caller stopped waiting for, which goes on.
var errStillReading = errors.New("did not deliver its oldest waiting event in time; still reading, a reload shows it")

// oldestRead is one read of a partition's oldest waiting event, shared by
// everyone who asks for it while it runs.
type oldestRead struct {
	done chan struct{}
	at   time.Time
	err  error
}

func (c *oldestCache) get(k string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[k]
	return t, ok
}

func (c *oldestCache) put(k string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil || len(c.at) >= oldestKept {
		c.at = map[string]time.Time{} // start over rather than grow
	}
	c.at[k] = t
}

// read is the arrival time of k, by read unless one is running already.
// The read runs up to oldestPatience whatever ctx does, and keeps what it
// finds; the caller waits only for ctx. With oldestReading reads running,
// a new one is bounded by ctx alone.
func (c *oldestCache) read(ctx context.Context, k string, read func(context.Context) (time.Time, error)) (time.Time, error) {
	c.mu.Lock()
	r, running := c.reading[k]
	if !running && len(c.reading) >= oldestReading {
		c.mu.Unlock()
		t, err := read(ctx)
		if err == nil {
			c.put(k, t)
		}
		return t, err
	}
	if !running {
		r = &oldestRead{done: make(chan struct{})}
		if c.reading == nil {
			c.reading = map[string]*oldestRead{}
		}
		c.reading[k] = r
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), oldestPatience)
			defer cancel()
			r.at, r.err = read(rctx)
			if r.err == nil {
				c.put(k, r.at)
			}
			c.mu.Lock()
			delete(c.reading, k)
			c.mu.Unlock()
			close(r.done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.at, r.err
	case <-ctx.Done():
		return time.Time{}, errStillReading
	}
}

// ReadOldest fills in Oldest for each of ps with events waiting and none
// yet lost: read from app's hub side by side, within timeout, or kept from
// an earlier read of the same position. Where some were lost, the oldest
// waiting event is already past retention, and the loss is what is told.
// Call it only while the function's trigger is off (see eventhub.Reader).
// It returns a problem for each partition that could not be read.
func (s *Source) ReadOldest(ctx context.Context, app circuit.App, ps []Position, timeout time.Duration) []Problem {
	if s.Hubs == nil || app.EventHubs == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var problems []Problem
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range ps {
		p := &ps[i]
		if !p.Counted || p.Waiting == 0 || p.Expired > 0 {
			continue
		}
		k := app.ID + "|" + app.EventHubs + "|" + p.Key() + "|" + strconv.FormatInt(p.Sequence, 10)
		if t, ok := s.oldest.get(k); ok {
			p.Oldest = t
			continue
		}
		wg.Go(func() {
			// The read may outlive this call: it holds copies, not p.
			conn, ns, hub, part, seq := app.EventHubs, p.Namespace, p.Hub, p.Partition, p.Sequence
			t, err := s.oldest.read(ctx, k, func(ctx context.Context) (time.Time, error) {
				return s.Hubs.Oldest(ctx, conn, ns, hub, part, seq)
			})
			if err != nil {
				if !errors.Is(err, ErrOtherHub) {
					mu.Lock()
					problems = append(problems, Problem{Blob: "event hub " + p.Namespace + "/" + p.Hub + " partition " + p.Partition, Reason: err.Error()})
					mu.Unlock()
				}
				return
			}
			p.Oldest = t
			s.oldest.put(k, t)
		})
	}
	wg.Wait()
	sort.Slice(problems, func(i, j int) bool { return problems[i].Blob < problems[j].Blob })
	return problems
}
