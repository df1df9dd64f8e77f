package e2e_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostsupervisor"
)

// localHost stands in for `fusebox local-host` in the test's process: it
// runs a demo host and starts a new one whenever what the supervisor
// watches in local.settings.json changes (hostsupervisor.Watched: the
// Disabled settings and the host's options), polling the file as the
// supervisor does. The supervisor itself is tested in its package.
type localHost struct {
	mu      sync.Mutex
	current *demo.Host
	batches []int // the host's batch size at each start
	done    chan struct{}
}

// runLocalHost starts the stand-in until ctx ends; newHost makes each
// host, which runs a round every every. The test's end waits for it.
func runLocalHost(t *testing.T, ctx context.Context, settings string, newHost func() *demo.Host, every time.Duration) *localHost {
	l := &localHost{done: make(chan struct{})}
	t.Cleanup(func() { <-l.done })
	go func() {
		defer close(l.done)
		var stop context.CancelFunc
		var last map[string]string
		poll := time.NewTicker(50 * time.Millisecond) // the settings file, as local-host polls it
		defer poll.Stop()
		for ctx.Err() == nil {
			now, err := hostsupervisor.Watched(settings)
			if err == nil && (last == nil || !maps.Equal(now, last)) {
				last = now
				if stop != nil {
					stop()
				}
				h := newHost()
				var hctx context.Context
				hctx, stop = context.WithCancel(ctx)
				if err := h.Start(hctx); err != nil {
					stop()
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				l.mu.Lock()
				l.current, l.batches = h, append(l.batches, h.BatchSize())
				l.mu.Unlock()
				go func() { _ = h.Run(hctx, every) }()
			}
			select {
			case <-poll.C:
			case <-ctx.Done():
			}
		}
		if stop != nil {
			stop()
		}
	}()
	return l
}

// host is the host running now (nil before the first start).
func (l *localHost) host() *demo.Host {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current
}

// starts are the batch sizes the host started with, one per start.
func (l *localHost) starts() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.batches...)
}
