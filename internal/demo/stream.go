package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/amqphub"
)

// Stream is the demo's simulated event hub: partition p holds every
// sequence number from 0 up to Rate × seconds since Epoch, so events keep
// arriving whether anyone consumes them or not, as in a hub. Events older
// than Retention are gone, as a hub's are; zero keeps everything.
type Stream struct {
	Name       string // the event hub's name
	Partitions int
	Rate       float64 // events per second per partition
	Epoch      time.Time
	Retention  time.Duration
	// Now is the hub's clock; nil: the real one.
	Now func() time.Time
}

func (s Stream) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// EnqueuedAt is when event seq arrived.
func (s Stream) EnqueuedAt(seq int64) time.Time {
	return s.Epoch.Add(time.Duration(float64(seq+1) / s.Rate * float64(time.Second)))
}

// Head is the last sequence number of each partition at now; -1: none yet.
func (s Stream) Head(now time.Time) int64 {
	return int64(now.Sub(s.Epoch).Seconds()*s.Rate) - 1
}

// First is the first sequence number each partition still holds at now:
// those enqueued more than Retention ago have expired.
func (s Stream) First(now time.Time) int64 {
	if s.Retention <= 0 {
		return 0
	}
	return max(s.Head(now.Add(-s.Retention))+1, 0)
}

// Served is the stream as an Event Hubs namespace describes it, for an
// amqphub.Server.
func (s Stream) Served() amqphub.Hub { return served{s} }

type served struct{ s Stream }

func (h served) Partitions(hub string) ([]string, bool) {
	if !strings.EqualFold(hub, h.s.Name) {
		return nil, false
	}
	ids := make([]string, h.s.Partitions)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids, true
}

func (h served) Partition(_ context.Context, hub, id string) (amqphub.Partition, bool) {
	p, err := strconv.Atoi(id)
	if !strings.EqualFold(hub, h.s.Name) || err != nil || p < 0 || p >= h.s.Partitions || strconv.Itoa(p) != id {
		return amqphub.Partition{}, false
	}
	now := h.s.now()
	last := h.s.Head(now)
	if last < 0 {
		return amqphub.Partition{First: 0, Last: -1, Empty: true}, true
	}
	first := min(h.s.First(now), last)
	return amqphub.Partition{First: first, Last: last, LastOffset: strconv.FormatInt(last*256, 10),
		LastEnqueued: h.s.EnqueuedAt(last), FirstEnqueued: h.s.EnqueuedAt(first)}, true
}

// OrdersStream is the hub the demo app's ProcessOrders consumes under
// `make run`, begun at epoch. It keeps an hour of events, so a demo left
// stopped for longer resumes past expired events, and its pages say how
// many.
func OrdersStream(epoch time.Time) Stream {
	return Stream{Name: "orders", Partitions: 4, Rate: 5, Epoch: epoch, Retention: time.Hour}
}

// HubAddr is where `make run` serves the demo's Event Hubs namespace.
const HubAddr = "127.0.0.1:7073"

// HostAddr is where `make run` serves the demo host's page; HealthPath
// is its orders store's health endpoint, which the orders-store
// downstream's probe calls (200, or 503 while the store is offline).
const (
	HostAddr   = "127.0.0.1:7072"
	HealthPath = "/health/orders-store"
)

// StreamEpoch is when the demo's hub began, kept in dir so that events
// keep their sequence numbers across restarts; the first caller sets it.
// The demo host and the demo hub start side by side: the time is written
// whole to a file of its own and linked into place, so whoever loses the
// race reads the winner's, never a half-written one.
func StreamEpoch(dir string, now time.Time) (time.Time, error) {
	name := filepath.Join(dir, "demo-hub-epoch")
	tmp, err := os.CreateTemp(dir, "demo-hub-epoch-*")
	if err != nil {
		return time.Time{}, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(now.UTC().Format(time.RFC3339Nano))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return time.Time{}, err
	}
	if err := os.Link(tmp.Name(), name); err == nil {
		return now, nil
	} else if !errors.Is(err, fs.ErrExist) {
		return time.Time{}, err
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("demo: %s does not hold a time (%v); remove it to start the demo hub afresh", name, err)
	}
	return t, nil
}
