package demo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/storage"
)

// HostSeed says what SeedHostStorage writes.
type HostSeed struct {
	// Live: a demo Host writes the checkpoints itself, and none are seeded.
	Live bool
	// HubAddr is a demo hub's address: the demo app reads its partitions'
	// heads from there. Empty: no Event Hubs connection.
	HubAddr string
	// Namespace of the seeded checkpoints; default
	// orders-demo.servicebus.windows.net.
	Namespace string
	// Queues: the demo host runs the queue-triggered TakeOrders (on
	// OrdersQueue) and parks corrupt events in ParkingQueue; their
	// circuits name them.
	Queues bool
}

// The demo app's queues: TakeOrders is triggered by OrdersQueue (its
// poison queue is OrdersQueue+"-poison"); ProcessOrders parks events it
// gave up on in ParkingQueue.
const (
	OrdersQueue  = "orders"
	ParkingQueue = "orders-parked"
)

// seededCheckpoints are the sequence numbers SeedHostStorage checkpoints
// on partitions 0 to 3; partition 1's is the furthest behind.
var seededCheckpoints = []int64{48211, 47930, 48502, 48117}

// AgedStream is an orders hub of rate events a second per partition,
// keeping them keep, in which the oldest event waiting behind the seeded
// checkpoints (partition 1's, after 47930) arrived at oldest; now is its
// clock (nil: the real one).
func AgedStream(oldest time.Time, rate float64, keep time.Duration, now func() time.Time) Stream {
	next := seededCheckpoints[1] + 1
	return Stream{Name: "orders", Partitions: len(seededCheckpoints), Rate: rate, Retention: keep, Now: now,
		Epoch: oldest.Add(-time.Duration(float64(next+1) / rate * float64(time.Second)))}
}

// SeedHostStorage writes, into the blob service of connectionString, what
// a Functions host keeps in its AzureWebJobsStorage — Event Hubs
// checkpoints and ownership for the demo's orders hub, a learned-
// concurrency snapshot, a timer's status and the host lock's blob — in the
// formats the host uses, and points the demo app at it.
func SeedHostStorage(ctx context.Context, st *storage.Store, connectionString string, now time.Time, o HostSeed) error {
	c, err := BlobClient(connectionString)
	if err != nil {
		return fmt.Errorf("demo: host storage: %w", err)
	}
	for _, name := range []string{hostinsight.EventHubContainer, hostinsight.HostsContainer} {
		if _, err := c.CreateContainer(ctx, name, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return fmt.Errorf("demo: create %s: %w", name, err)
		}
	}
	app, err := st.Apps.Get(ctx, AppID)
	if err != nil {
		return err
	}
	host := hostinsight.HostID(app.HostID, app.Site, app.Slot)
	put := func(container, name, body string, meta map[string]string) error {
		m := map[string]*string{}
		for k, v := range meta {
			m[k] = &v
		}
		_, err := c.UploadBuffer(ctx, container, name, []byte(body), &azblob.UploadBufferOptions{Metadata: m})
		if err != nil {
			return fmt.Errorf("demo: write %s/%s: %w", container, name, err)
		}
		return nil
	}
	ns := o.Namespace
	if ns == "" {
		ns = "orders-demo.servicebus.windows.net"
	}
	still := seededCheckpoints
	if o.Live {
		still = nil
	}
	for p, seq := range still {
		part := strconv.Itoa(p)
		if err := put(hostinsight.EventHubContainer, ns+"/orders/$default/checkpoint/"+part, "",
			map[string]string{"sequencenumber": strconv.FormatInt(seq, 10), "offset": strconv.FormatInt(seq*412, 10)}); err != nil {
			return err
		}
		if err := put(hostinsight.EventHubContainer, ns+"/orders/$default/ownership/"+part, "",
			map[string]string{"ownerid": fmt.Sprintf("demo-instance-%d", p%2)}); err != nil {
			return err
		}
	}
	// Dynamic concurrency covers Blob, Queue and Service Bus triggers, not
	// Event Hubs: the host learns it for the queue-triggered TakeOrders,
	// never for ProcessOrders.
	snapshot := fmt.Sprintf(`{"Timestamp":%q,"NumberOfCores":4,"FunctionSnapshots":{"Orders.Functions.TakeOrders":{"Concurrency":16}}}`,
		now.Add(-3*time.Minute).UTC().Format(time.RFC3339))
	if err := put(hostinsight.HostsContainer, "concurrency/"+host+"/concurrencyStatus.json", snapshot, nil); err != nil {
		return err
	}
	// NightlySalesSummary runs at 01:00 in Tokyo: 16:00 UTC the day before.
	last := time.Date(now.Year(), now.Month(), now.Day(), 16, 0, 0, 0, time.UTC)
	if last.After(now) {
		last = last.Add(-24 * time.Hour)
	}
	status := fmt.Sprintf(`{"Last":%q,"Next":%q,"LastUpdated":%q}`, last.Format(time.RFC3339), last.Add(24*time.Hour).Format(time.RFC3339), last.Add(2*time.Second).Format(time.RFC3339))
	if err := put(hostinsight.HostsContainer, "timers/"+host+"/Host.Functions.NightlySalesSummary/status", status, nil); err != nil {
		return err
	}
	app.HostStorage = connectionString
	if o.HubAddr != "" {
		app.EventHubs = amqphub.ConnectionString(o.HubAddr)
	}
	if err := st.Apps.Put(ctx, app); err != nil {
		return err
	}
	// ProcessOrders consumes the orders hub: its page shows those
	// checkpoints as its own.
	ci, err := st.Circuits.Get(ctx, AppID, "ProcessOrders")
	if err != nil {
		return err
	}
	ci.EventHub = ns + "/orders/$default"
	// As the demo's hub keeps them: its page counts down to the first
	// waiting event's expiry while the trigger is off.
	ci.HubRetention = OrdersStream(now).Retention
	if o.Queues {
		ci.Parking = ParkingQueue
	}
	if err := st.Circuits.UpdateSettings(ctx, ci); err != nil {
		return err
	}
	if !o.Queues {
		return nil
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: AppID, Function: "TakeOrders", Settings: circuit.Settings{
		Threshold:  20,
		Window:     time.Minute,
		Queue:      OrdersQueue,
		Recipients: []string{"oncall@example.com"},
	}, State: circuit.Closed, ChangedAt: now, Reason: "created with the demo"}); err != nil {
		return err
	}
	// TakeOrders writes to the orders store too; the live demo host
	// answers its health probe (HealthPath).
	probe := ""
	if o.Live {
		probe = "http://" + HostAddr + HealthPath
	}
	return seedStore(ctx, st, []string{AppID + "/ProcessOrders", AppID + "/TakeOrders"}, probe)
}

// BlobClient is a blob client whose every try is bounded: a storage
// account that stops answering fails the seeding in seconds instead of
// holding it (and a test that waits on it) for ever.
func BlobClient(connectionString string) (*azblob.Client, error) {
	o := &azblob.ClientOptions{}
	o.Retry = policy.RetryOptions{MaxRetries: 3, TryTimeout: 10 * time.Second}
	return azblob.NewClientFromConnectionString(connectionString, o)
}
