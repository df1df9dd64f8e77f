package hostinsight_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
)

type drainFixture struct {
	circuits []circuit.Circuit
	apps     []circuit.App
	mu       sync.Mutex
	put      []string
}

func (f *drainFixture) ListCircuits(context.Context) ([]circuit.Circuit, error) {
	return f.circuits, nil
}
func (f *drainFixture) ListApps(context.Context) ([]circuit.App, error) { return f.apps, nil }

// Every app's storage holds one checkpoint of hub "orders", 40 behind.
func (f *drainFixture) SnapshotAfter(_ context.Context, _ circuit.App, now, _ time.Time) (hostinsight.Snapshot, bool) {
	cp := hostinsight.Checkpoint{Namespace: "ns", Hub: "orders", ConsumerGroup: "$default", Partition: "0", Sequence: 60, HasSequence: true}
	return hostinsight.Snapshot{ReadAt: now, Checkpoints: []hostinsight.Checkpoint{cp}, Heads: map[string]hostinsight.Head{cp.Key(): {First: 0, Last: 100}}}, true
}

func (f *drainFixture) PutWaiting(_ context.Context, appID, function string, _ time.Time, n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.put = append(f.put, appID+"/"+function+"="+string(rune('0'+n/10)))
	return nil
}

// The waiting count is kept while a trigger is off and for an hour after
// it is back on; not for circuits that name no hub, still being switched,
// or back on for longer.
func TestTheDrainSamplesOffAndLatelyResumedCircuits(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	app := circuit.App{ID: "orders", HostStorage: "UseDevelopmentStorage=true", EventHubs: "ns"}
	c := func(fn string, st circuit.State, switched time.Duration, hub string, applied bool) circuit.Circuit {
		ci := circuit.Circuit{AppID: "orders", Function: fn, Settings: circuit.Settings{EventHub: hub}, State: st, Episode: 2, ChangedAt: now.Add(-switched), Actuation: circuit.Actuation{AppliedEpisode: 2, AppliedAt: now.Add(-switched)}}
		if !applied {
			ci.AppliedEpisode = 1
		}
		return ci
	}
	f := &drainFixture{apps: []circuit.App{app, {ID: "bare", EventHubs: "ns"}}, circuits: []circuit.Circuit{
		c("Off", circuit.Open, 3*time.Hour, "orders", true),
		c("ByHand", circuit.ForcedOpen, 5*time.Minute, "orders", true),
		c("Resumed", circuit.Closed, 30*time.Minute, "orders", true),
		c("LongAgo", circuit.Closed, 2*time.Hour, "orders", true),
		c("NoHub", circuit.Open, time.Minute, "", true),
		c("Switching", circuit.Open, time.Minute, "orders", false),
		{AppID: "bare", Function: "NoStorage", Settings: circuit.Settings{EventHub: "orders"}, State: circuit.Open},
	}}
	d := &hostinsight.Drain{Circuits: f, Hosts: f, Samples: f, Now: func() time.Time { return now }}
	if err := d.Pass(t.Context(), lease.Fence{}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(f.put)
	if want := []string{"orders/ByHand=4", "orders/Off=4", "orders/Resumed=4"}; !slices.Equal(f.put, want) {
		t.Errorf("sampled %v, want %v (40 waiting each)", f.put, want)
	}
	samples := []hostinsight.WaitingSample{{At: now.Add(-time.Minute), Waiting: 0}, {At: now, Waiting: 900}, {At: now.Add(time.Minute), Waiting: 300}, {At: now.Add(2 * time.Minute), Waiting: 9}, {At: now.Add(3 * time.Minute), Waiting: 0}}
	if at, ok := hostinsight.Drained(samples, now); !ok || !at.At.Equal(now.Add(2*time.Minute)) {
		t.Errorf("caught up at %+v %v; want the first count after the resume at most a hundredth of the most (9 of 900)", at, ok)
	}
	if _, ok := hostinsight.Drained(samples[:3], now); ok {
		t.Error("300 of 900 waiting counts as caught up")
	}
}
