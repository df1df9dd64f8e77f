package replay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

type lister struct {
	cs   []circuit.Circuit
	apps []circuit.App
}

func (l lister) ListCircuits(context.Context) ([]circuit.Circuit, error) { return l.cs, nil }
func (l lister) ListApps(context.Context) ([]circuit.App, error)         { return l.apps, nil }

type checkpointsAt struct {
	mu  sync.Mutex
	cps []hostinsight.Checkpoint
}

func (c *checkpointsAt) Checkpoints(context.Context, circuit.App) ([]hostinsight.Checkpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]hostinsight.Checkpoint(nil), c.cps...), nil
}

func (c *checkpointsAt) move(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.cps {
		c.cps[i].Sequence = seq
	}
}

// The sampler writes a sample when a position moved, and otherwise once
// every KeepAlive, so that the last sample before any moment is found
// within Lookback; it places the point of a circuit whose trigger is off,
// once.
func TestTheSamplerKeepsWhatMovedAndPlacesAnOpenedCircuitsPoint(t *testing.T) {
	t.Parallel()
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableReplays); err != nil {
		t.Fatal(err)
	}
	replays := storage.New(svc).Replays
	app := circuit.App{ID: "orders", HostStorage: "UseDevelopmentStorage=true"}
	ci := circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{EventHub: "orders/$default"}, State: circuit.Closed}
	other := circuit.Circuit{AppID: "orders", Function: "TakeOrders", State: circuit.Closed} // names no hub
	hosts := &checkpointsAt{cps: []hostinsight.Checkpoint{
		{Namespace: "ns", Hub: "orders", ConsumerGroup: "$default", Partition: "0", Sequence: 10, HasSequence: true},
		{Namespace: "ns", Hub: "orders", ConsumerGroup: "$default", Partition: "1", Sequence: 10, HasSequence: true},
		{Namespace: "ns", Hub: "payments", ConsumerGroup: "$default", Partition: "0", Sequence: 99, HasSequence: true},
	}}
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	var placed []int64
	s := &replay.Sampler{Circuits: lister{[]circuit.Circuit{ci, other}, []circuit.App{app}}, Hosts: hosts, History: replays, Now: func() time.Time { return now },
		Place: func(_ context.Context, c circuit.Circuit, _ circuit.App) error {
			placed = append(placed, c.Episode)
			return nil
		}}
	pass := func() {
		t.Helper()
		if err := s.Pass(t.Context(), lease.Fence{}); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		t.Helper()
		got, err := replays.After(t.Context(), "orders", "ProcessOrders", now.Add(-time.Hour), now.Add(time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	pass()
	now = now.Add(replay.Every)
	pass() // nothing moved
	if n := count(); n != 1 {
		t.Errorf("%d samples after two passes over the same positions, want 1", n)
	}
	hosts.move(20)
	now = now.Add(replay.Every)
	pass()
	now = now.Add(replay.KeepAlive)
	pass() // nothing moved, but the last sample is KeepAlive old
	if n := count(); n != 3 {
		t.Errorf("%d samples, want 3: the first, the move and the keep-alive", n)
	}
	last, ok, err := replays.Before(t.Context(), "orders", "ProcessOrders", now)
	if err != nil || !ok || len(last.Marks) != 2 || last.Marks[0].Sequence != 20 {
		t.Errorf("the last sample: %+v %v %v; want both partitions of orders (not payments) at 20", last, ok, err)
	}
	if _, ok, _ := replays.Before(t.Context(), "orders", "ProcessOrders", now.Add(replay.Lookback+time.Minute)); ok {
		t.Error("a sample older than the lookback placed a point")
	}
	if len(placed) != 0 {
		t.Errorf("points placed for a closed circuit: %v", placed)
	}
	ci.State, ci.Episode, ci.AppliedEpisode = circuit.Open, 4, 4
	s.Circuits = lister{[]circuit.Circuit{ci, other}, []circuit.App{app}}
	pass()
	if len(placed) != 1 || placed[0] != 4 {
		t.Errorf("points placed: %v; want episode 4's", placed)
	}
}

// A history row or a record written by hand that does not read places
// nothing and resumes nothing; each is listed among the rows Fusebox
// skipped, and the samples around it still serve.
func TestABadReplayRowIsSkippedAndListed(t *testing.T) {
	t.Parallel()
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableReplays); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	good := replay.Sample{At: at, Marks: []replay.Mark{{Key: "ns/orders/$default/0", Sequence: 5, HasSequence: true}}}
	if err := st.Replays.Put(t.Context(), "orders", "ProcessOrders", good); err != nil {
		t.Fatal(err)
	}
	type raw struct {
		tablestore.Meta
		Kind, Function, Body string
		At                   time.Time
	}
	for _, r := range []*raw{
		{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: fmt.Sprintf("h|ProcessOrders|%019d", at.Add(time.Second).UnixMilli())}, Kind: "h", Function: "ProcessOrders", Body: "{not json", At: at.Add(time.Second)},
		{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: fmt.Sprintf("r|ProcessOrders|%019d", 3)}, Kind: "r", Function: "ProcessOrders", Body: `{"episode": 4}`, At: at},
	} {
		if err := svc.Table(storage.TableReplays).Upsert(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	s, ok, err := st.Replays.Before(t.Context(), "orders", "ProcessOrders", at.Add(time.Minute))
	if err != nil || !ok || s.Marks[0].Sequence != 5 {
		t.Errorf("the last good sample before a bad one: %+v %v %v", s, ok, err)
	}
	if _, err := st.Replays.Get(t.Context(), "orders", "ProcessOrders", 3); err == nil {
		t.Error("a record whose body names another episode was read")
	}
	listed := map[string]bool{}
	for _, f := range st.Faults.List() {
		listed[f.Key] = true
	}
	for _, key := range []string{fmt.Sprintf("orders/h|ProcessOrders|%019d", at.Add(time.Second).UnixMilli()), fmt.Sprintf("orders/r|ProcessOrders|%019d", 3)} {
		if !listed[key] {
			t.Errorf("%s is not listed among the rows skipped: %v", key, st.Faults.List())
		}
	}
}
