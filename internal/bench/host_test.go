package bench_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	bloblease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/testenv"
)

// BenchmarkHostSnapshot is what a circuit page waits for to show the app's
// own storage and hub: 32 partitions' checkpoints and ownership, the
// concurrency snapshot, 4 timers and 4 leased locks in Azurite, and the 32
// partitions' heads from a hub over AMQP. "fusebox" is hostinsight.Source
// with no cache, through internal/eventhub; "raw" is the same reads made
// directly with azblob and one azeventhubs client, side by side, in the same
// run.
//
//	go test ./internal/bench -run '^$' -bench HostSnapshot -benchtime 100x
func BenchmarkHostSnapshot(b *testing.B) {
	const partitions = 32
	tag := strings.ToLower(testenv.Prefix(b))
	hostID, ns := tag, tag+".servicebus.windows.net"
	conn := testenv.ConnectionString(b)
	ctx := context.Background()
	bc, err := azblob.NewClientFromConnectionString(conn, &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []string{hostinsight.EventHubContainer, hostinsight.HostsContainer} {
		_, _ = bc.CreateContainer(ctx, c, nil)
	}
	put := func(c, name, body string, meta map[string]string) {
		m := map[string]*string{}
		for k, v := range meta {
			m[k] = &v
		}
		if _, err := bc.UploadBuffer(ctx, c, name, []byte(body), &azblob.UploadBufferOptions{Metadata: m}); err != nil {
			b.Fatal(err)
		}
	}
	heads := map[string]amqphub.Partition{}
	for p := range partitions {
		id := strconv.Itoa(p)
		put(hostinsight.EventHubContainer, ns+"/orders/$default/checkpoint/"+id, "", map[string]string{"sequencenumber": "1000", "offset": "4000"})
		put(hostinsight.EventHubContainer, ns+"/orders/$default/ownership/"+id, "", map[string]string{"ownerid": "instance"})
		heads[id] = amqphub.Partition{Last: 1200}
	}
	put(hostinsight.HostsContainer, "concurrency/"+hostID+"/concurrencyStatus.json", `{"Timestamp":"2026-12-01T10:00:00Z","NumberOfCores":4,"FunctionSnapshots":{"F.ProcessOrders":{"Concurrency":16}}}`, nil)
	for i := range 4 {
		put(hostinsight.HostsContainer, fmt.Sprintf("timers/%s/Host.Functions.T%d/status", hostID, i), `{"Last":"2026-12-01T09:00:00Z","Next":"2026-12-01T10:00:00Z","LastUpdated":"2026-12-01T09:00:01Z"}`, nil)
		name := fmt.Sprintf("locks/%s/lock-%d", hostID, i)
		put(hostinsight.HostsContainer, name, "", nil)
		lc, err := bloblease.NewBlobClient(bc.ServiceClient().NewContainerClient(hostinsight.HostsContainer).NewBlobClient(name), nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			b.Fatal(err)
		}
		zero := int32(0)
		defer lc.BreakLease(ctx, &bloblease.BlobBreakOptions{BreakPeriod: &zero}) // the next run writes the blob again
	}
	hub := amqphub.ConnectionString(amqphubtest.Serve(b, amqphub.Fixed{"orders": heads}))
	ids := make([]string, partitions)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}

	b.Run("fusebox", func(b *testing.B) {
		hubs := &eventhub.Reader{Endpoints: egress.Endpoints{Development: true}, Policy: egress.Policy{AllowLoopback: true}}
		defer hubs.Close(ctx)
		src := &hostinsight.Source{Endpoints: egress.Endpoints{Development: true}, Transport: egress.Policy{AllowLoopback: true}.Transporter(), Hubs: hubs, TTL: time.Nanosecond}
		app := circuit.App{ID: "bench", HostStorage: conn, HostID: hostID, EventHubs: hub}
		measure(b, func() error {
			snap, _ := src.Snapshot(ctx, app, time.Now())
			// Count this run's own: an Azurite shared with tests holds others.
			ps, _ := hostinsight.Positions(snap, circuit.HubRef{Namespace: ns, Hub: "orders"}, time.Time{})
			counted, locks := 0, 0
			for _, p := range ps {
				if p.Counted && p.Waiting == 200 {
					counted++
				}
			}
			for _, l := range snap.Locks {
				if strings.HasPrefix(l.Blob, "locks/"+hostID+"/") {
					locks++
				}
			}
			if len(ps) != partitions || counted != partitions || snap.Concurrency == nil || len(snap.Timers) != 4 || locks != 4 {
				return fmt.Errorf("snapshot: %d checkpoints, %d with 200 waiting, %d timers, %d locks", len(ps), counted, len(snap.Timers), locks)
			}
			return nil
		})
	})
	b.Run("raw", func(b *testing.B) {
		client, err := azeventhubs.NewConsumerClientFromConnectionString(hub, "orders", azeventhubs.DefaultConsumerGroup, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close(ctx)
		list := func(c, prefix string) (int, error) {
			n := 0
			p := bc.NewListBlobsFlatPager(c, &container.ListBlobsFlatOptions{Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true}})
			for p.More() {
				page, err := p.NextPage(ctx)
				if err != nil {
					return n, err
				}
				n += len(page.Segment.BlobItems)
			}
			return n, nil
		}
		download := func(c, name string) error {
			r, err := bc.DownloadStream(ctx, c, name, nil)
			if err != nil {
				return err
			}
			return r.Body.Close()
		}
		measure(b, func() error {
			if _, err := list(hostinsight.EventHubContainer, ""); err != nil {
				return err
			}
			if err := download(hostinsight.HostsContainer, "concurrency/"+hostID+"/concurrencyStatus.json"); err != nil {
				return err
			}
			if _, err := list(hostinsight.HostsContainer, "timers/"+hostID+"/"); err != nil {
				return err
			}
			for i := range 4 {
				if err := download(hostinsight.HostsContainer, fmt.Sprintf("timers/%s/Host.Functions.T%d/status", hostID, i)); err != nil {
					return err
				}
			}
			if _, err := list(hostinsight.HostsContainer, ""); err != nil {
				return err
			}
			var wg sync.WaitGroup
			errs := make([]error, len(ids))
			for i, id := range ids {
				wg.Go(func() { _, errs[i] = client.GetPartitionProperties(ctx, id, nil) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
}
