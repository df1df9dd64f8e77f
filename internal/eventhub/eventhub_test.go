package eventhub_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/testenv"
)

// hub has partitions 0 and 1 of "orders"; while stalled, partition reads
// wait until it is released.
type hub struct {
	stalled atomic.Bool
	release chan struct{}
}

func (h *hub) Partitions(name string) ([]string, bool) { return []string{"0", "1"}, name == "orders" }

func (h *hub) Partition(ctx context.Context, name, id string) (amqphub.Partition, bool) {
	if h.stalled.Load() {
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	if name != "orders" || (id != "0" && id != "1") {
		return amqphub.Partition{}, false
	}
	last := map[string]int64{"0": 1200, "1": 950}[id]
	return amqphub.Partition{First: 0, Last: last, LastEnqueued: time.Now()}, true
}

func TestHeadsAreReadForEachPartition(t *testing.T) {
	conn := amqphubtest.ServeConnection(t, &hub{})
	r := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
	defer r.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	heads, err := r.Heads(ctx, conn, "orders.servicebus.windows.net", "orders", []string{"0", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if heads["0"].Last != 1200 || heads["1"].Last != 950 || len(heads) != 2 {
		t.Fatalf("heads = %+v", heads)
	}
	// A partition the hub does not have is an error beside the others.
	heads, err = r.Heads(ctx, conn, "orders.servicebus.windows.net", "orders", []string{"0", "9"})
	if err == nil || !strings.Contains(err.Error(), "partition 9") || heads["0"].Last != 1200 {
		t.Fatalf("with partition 9: heads = %+v, err = %v", heads, err)
	}
}

// A namespace that does not answer costs the caller its own deadline and
// no more, and the next read, once it answers again, works.
func TestANamespaceThatDoesNotAnswerIsLeftAtTheDeadline(t *testing.T) {
	h := &hub{release: make(chan struct{})}
	conn := amqphubtest.ServeConnection(t, h)
	r := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
	defer r.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := r.Heads(ctx, conn, "x", "orders", []string{"0"}); err != nil {
		t.Fatal(err) // connected and authorised before the stall
	}
	h.stalled.Store(true)
	short, cancelShort := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	_, err := r.Heads(short, conn, "x", "orders", []string{"0", "1"})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("err = %v, want one that says the hub did not answer in time", err)
	}
	if took > 2*time.Second {
		t.Fatalf("a read with a 500 ms deadline took %v", took)
	}
	h.stalled.Store(false)
	close(h.release)
	heads, err := r.Heads(ctx, conn, "x", "orders", []string{"1"})
	if err != nil || heads["1"].Last != 950 {
		t.Fatalf("after the stall: heads = %+v, err = %v", heads, err)
	}
}

// A port that accepts and never speaks AMQP is the same: the deadline.
func TestASilentPortIsLeftAtTheDeadline(t *testing.T) {
	r := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
	defer r.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Heads(ctx, silentPort(t), "x", "orders", []string{"0"})
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v, want an error within about 500 ms", err, time.Since(start))
	}
}

// silentPort accepts connections and never says a word.
func silentPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return amqphub.ConnectionString(l.Addr().String())
}

// A hub that does not answer leaves a page its deadline and the rest of
// what the app's storage holds: checkpoints and concurrency are there,
// the hub is named as a problem, and no count is made up.
// hostStorage writes one checkpoint of the hub, partition 0 at 41, in a
// namespace of the test's own, and returns the namespace's tag.
func hostStorage(t *testing.T, hub string) (*azblob.Client, string) {
	t.Helper()
	bc, err := azblob.NewClientFromConnectionString(testenv.ConnectionString(t), &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{hostinsight.EventHubContainer, hostinsight.HostsContainer} {
		if _, err := bc.CreateContainer(t.Context(), name, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			t.Fatal(err)
		}
	}
	tag := testenv.Prefix(t)
	seq := "41"
	if _, err := bc.UploadBuffer(t.Context(), hostinsight.EventHubContainer, tag+".servicebus.windows.net/"+hub+"/$default/checkpoint/0", nil,
		&azblob.UploadBufferOptions{Metadata: map[string]*string{"sequencenumber": &seq}}); err != nil {
		t.Fatal(err)
	}
	return bc, tag
}

// countedHub counts the reads of one hub's partitions.
type countedHub struct {
	amqphub.Fixed
	name  string
	reads atomic.Int64
}

func (c *countedHub) Partition(ctx context.Context, hub, id string) (amqphub.Partition, bool) {
	if hub == c.name {
		c.reads.Add(1)
	}
	return c.Fixed.Partition(ctx, hub, id)
}

// Pages that ask at once for an app's snapshot the cache does not hold
// (a list's Waiting cells, one per open circuit) share one read of its
// storage and hub. (The hub's name is the test's own: the test Azurite
// holds other tests' checkpoints, which the emulator-style connection
// reads too.)
func TestCallersAtOnceShareOneRead(t *testing.T) {
	name := "hub-" + testenv.Prefix(t)
	_, tag := hostStorage(t, name)
	h := &countedHub{Fixed: amqphub.Fixed{name: {"0": {Last: 1200}}}, name: name}
	hubs := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
	defer hubs.Close(context.Background())
	src := &hostinsight.Source{Endpoints: egress.Endpoints{Development: true}, Transport: egress.Policy{AllowLoopback: true}.Transporter(), Hubs: hubs}
	app := circuit.App{ID: "orders-" + tag, HostStorage: testenv.ConnectionString(t), HostID: tag, EventHubs: amqphubtest.ServeConnection(t, h)}
	const callers = 20
	snaps := make(chan hostinsight.Snapshot, callers)
	var start, done sync.WaitGroup
	start.Add(1)
	for range callers {
		done.Go(func() {
			start.Wait()
			snap, _ := src.Snapshot(t.Context(), app, time.Now())
			snaps <- snap
		})
	}
	start.Done()
	done.Wait()
	close(snaps)
	for snap := range snaps {
		ps, _ := hostinsight.Positions(snap, circuit.HubRef{Hub: name}, time.Time{})
		if w, counted, _ := hostinsight.Waiting(ps); counted != 1 || w != 1200-41 {
			t.Errorf("a caller saw %d waiting on %d partitions, want %d on 1", w, counted, 1200-41)
		}
	}
	if n := h.reads.Load(); n != 1 {
		t.Errorf("%d callers at once read the partition %d times, want once", callers, n)
	}
}

func TestASilentHubLeavesTheRestOfTheSnapshot(t *testing.T) {
	bc, tag := hostStorage(t, "orders")
	if _, err := bc.UploadBuffer(t.Context(), hostinsight.HostsContainer, "concurrency/"+tag+"/concurrencyStatus.json",
		[]byte(`{"Timestamp":"2026-12-01T10:00:00Z","NumberOfCores":2,"FunctionSnapshots":{"F.ProcessOrders":{"Concurrency":4}}}`), nil); err != nil {
		t.Fatal(err)
	}
	hubs := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
	defer hubs.Close(context.Background())
	src := &hostinsight.Source{Endpoints: egress.Endpoints{Development: true}, Transport: egress.Policy{AllowLoopback: true}.Transporter(), Hubs: hubs, Timeout: 3 * time.Second}
	app := circuit.App{ID: "orders-" + tag, HostStorage: testenv.ConnectionString(t), HostID: tag, EventHubs: silentPort(t)}
	start := time.Now()
	snap, _ := src.Snapshot(t.Context(), app, time.Now())
	took := time.Since(start)
	// The deadline leaves the storage reads beside the silent hub time to
	// answer on a machine loaded by other tests; the silent hub must cost
	// no more than it.
	if took > 6*time.Second {
		t.Errorf("the snapshot took %v with a 3 s deadline", took)
	}
	if snap.Concurrency == nil || snap.Concurrency.Functions["ProcessOrders"] != 4 {
		t.Errorf("concurrency = %+v, want ProcessOrders at 4", snap.Concurrency)
	}
	key := tag + ".servicebus.windows.net/orders/$default/0"
	var found, named bool
	for _, c := range snap.Checkpoints {
		found = found || c.Key() == key
	}
	for _, p := range snap.Problems {
		named = named || (p.Blob == "event hub "+tag+".servicebus.windows.net/orders" && strings.Contains(p.Reason, "did not answer in time"))
	}
	if _, ok := snap.Heads[key]; ok || !found || !named {
		t.Errorf("checkpoint found %v, hub named as a problem %v, heads %v; problems %+v", found, named, snap.Heads, snap.Problems)
	}
}

func TestAConnectionForAnotherNamespaceOrHubIsNotUsed(t *testing.T) {
	r := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
	ctx := context.Background()
	for _, conn := range []string{
		"Endpoint=sb://payments.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=a2V5",
		"Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=a2V5;EntityPath=refunds",
		"payments.servicebus.windows.net",
	} {
		if _, err := r.Heads(ctx, conn, "orders.servicebus.windows.net", "orders", []string{"0"}); !errors.Is(err, hostinsight.ErrOtherHub) {
			t.Errorf("%s: err = %v, want ErrOtherHub", conn, err)
		}
	}
	if _, err := r.Heads(ctx, "orders.servicebus.windows.net", "orders.servicebus.windows.net", "orders", []string{"0"}); err == nil || !strings.Contains(err.Error(), "managed identity") {
		t.Errorf("a host name without a credential: err = %v", err)
	}
}

func TestCheckSaysWhatIsWrong(t *testing.T) {
	for conn, ok := range map[string]bool{
		"":                              true,
		"orders.servicebus.windows.net": true,
		"Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=l;SharedAccessKey=a2V5": true,
		"Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=l":                      false,
		"https://orders.servicebus.windows.net/x":                                                 false,
	} {
		if err := eventhub.Check(egress.Endpoints{Cloud: egress.Clouds["public"]}, conn); (err == nil) != ok {
			t.Errorf("Check(%q) = %v", conn, err)
		}
	}
}

// The oldest waiting event is the one after the checkpoint, read from the
// hub with the time it arrived; a checkpoint before the first retained
// event reads that one.
func TestOldestIsWhenTheEventAfterTheCheckpointArrived(t *testing.T) {
	first := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	conn := amqphubtest.ServeConnection(t, amqphub.Fixed{"orders": {"0": {First: 1000, Last: 2000, FirstEnqueued: first, LastEnqueued: first.Add(1000 * time.Second)}}})
	r := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
	defer r.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		after int64
		want  time.Time
	}{{1499, first.Add(500 * time.Second)}, {10, first}} {
		got, err := r.Oldest(ctx, conn, "orders.servicebus.windows.net", "orders", "0", tc.after)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("after %d: oldest %v (%v), want %v", tc.after, got, err, tc.want)
		}
	}
	if _, err := r.Oldest(ctx, conn, "orders.servicebus.windows.net", "orders", "9", 10); err == nil {
		t.Error("a partition the hub does not have gave an arrival time")
	}
}
