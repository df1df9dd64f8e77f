package bench_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2/checkpoints"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

type benchSwitch struct{ on chan time.Time }

func (s benchSwitch) Flip(_ context.Context, appID, function, _, _ string, _ circuit.Action) (circuit.Circuit, error) {
	s.on <- time.Now()
	return circuit.Circuit{AppID: appID, Function: function}, nil
}

func (s benchSwitch) ResumeByLink(ctx context.Context, l circuit.LinkClaim, actor, reason string) (circuit.Circuit, error) {
	return s.Flip(ctx, l.AppID, l.Function, actor, reason, circuit.Resuming)
}

type benchOne struct{ ci circuit.Circuit }

func (o *benchOne) Get(context.Context, string, string) (circuit.Circuit, error) { return o.ci, nil }

type benchApps struct{ app circuit.App }

func (a benchApps) Get(context.Context, string) (circuit.App, error) { return a.app, nil }

type benchFirst struct{ at time.Time }

func (f benchFirst) First(context.Context, string, string, time.Time, time.Time) (time.Time, bool, error) {
	return f.at, true, nil
}

// BenchmarkResumeFromFirstFailure is "resume pressed → trigger asked on"
// with 32 partitions moved back: replay.Service.Resume (the point, placed
// by the history when the circuit opened, read; the host's snapshot read
// for the hub's retention; each partition's checkpoint and ownership read
// and the plan recorded; 32 ownership checks and conditional writes, eight
// at a time; the outcome recorded) against Azurite. "raw" is
// the 32 partitions' writes alone in the same run: a read of each blob's
// ETag and a SetMetadata on condition of it, with azblob.
//
//	go test ./internal/bench -run '^$' -bench ResumeFromFirstFailure -benchtime 20x
func BenchmarkResumeFromFirstFailure(b *testing.B) {
	const partitions = 32
	ctx := context.Background()
	conn := testenv.ConnectionString(b)
	bc, err := azblob.NewClientFromConnectionString(conn, &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	_, _ = bc.CreateContainer(ctx, hostinsight.EventHubContainer, nil)
	cc := bc.ServiceClient().NewContainerClient(hostinsight.EventHubContainer)
	store, err := checkpoints.NewBlobStore(cc, nil)
	if err != nil {
		b.Fatal(err)
	}
	name := strings.ToLower(testenv.Prefix(b))
	ns := name + ".servicebus.windows.net"
	setAll := func(seq int64) {
		for p := range partitions {
			o := strconv.FormatInt(seq*256, 10)
			if err := store.SetCheckpoint(ctx, azeventhubs.Checkpoint{FullyQualifiedNamespace: ns, EventHubName: name, ConsumerGroup: "$default",
				PartitionID: strconv.Itoa(p), SequenceNumber: &seq, Offset: &o}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	svc, _ := testenv.Storage(b)
	if err := svc.CreateTable(ctx, storage.TableReplays); err != nil {
		b.Fatal(err)
	}
	replays := storage.New(svc).Replays
	app := circuit.App{ID: "orders", HostStorage: conn}
	source := &hostinsight.Source{Endpoints: egress.Endpoints{Development: true}, Transport: egress.Policy{AllowLoopback: true}.Transporter(), TTL: time.Nanosecond}
	base := time.Now().Add(-time.Hour)
	setAll(99)
	ci := &benchOne{ci: circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{Window: time.Minute, EventHub: name + "/$default"},
		State: circuit.Open, ChangedAt: base.Add(time.Minute)}}
	sampler := &replay.Sampler{Circuits: lister{ci, app}, Hosts: source, History: replays, Now: func() time.Time { return base }}
	if err := sampler.Pass(ctx, lease.Fence{}); err != nil {
		b.Fatal(err)
	}
	on := benchSwitch{on: make(chan time.Time, 1)}
	rs := &replay.Service{Circuits: ci, Apps: benchApps{app}, Switch: on, Records: replays, History: replays, Failures: benchFirst{base.Add(30 * time.Second)},
		Hosts: source, Now: func() time.Time { return time.Now().Add(time.Minute) },
		Blobs: func(a circuit.App) (replay.Blobs, error) {
			c, err := source.Client(a)
			return replay.Checkpoints{Client: c}, err
		}}
	var fusebox, raw []time.Duration
	for i := range b.N {
		setAll(199)
		ci.ci.Episode, ci.ci.AppliedEpisode = int64(i+1), int64(i+1)
		// The checkpoint history places the point when the circuit opens,
		// well before anyone presses resume.
		if err := rs.Place(ctx, ci.ci, app); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, rec, err := rs.Resume(ctx, "orders", "ProcessOrders", "bench", "", nil); err != nil {
			b.Fatal(err)
		} else if r, _ := rec.Counts(); r != 100*partitions {
			b.Fatalf("replayed %d, want %d", r, 100*partitions)
		}
		fusebox = append(fusebox, (<-on.on).Sub(start))

		setAll(199)
		start = time.Now()
		for p := range partitions {
			bl := cc.NewBlobClient(ns + "/" + name + "/$default/checkpoint/" + strconv.Itoa(p))
			props, err := bl.GetProperties(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			seq, off := "99", "25344"
			match := azcore.ETag(*props.ETag)
			if _, err := bl.SetMetadata(ctx, map[string]*string{"sequencenumber": &seq, "offset": &off},
				&blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &match}}}); err != nil {
				b.Fatal(err)
			}
		}
		raw = append(raw, time.Since(start))
	}
	b.ReportMetric(percentile(fusebox, 0.5).Seconds(), "p50-s")
	b.ReportMetric(slices.Max(fusebox).Seconds(), "max-s")
	b.ReportMetric(percentile(raw, 0.5).Seconds(), "raw-p50-s")
	b.ReportMetric(slices.Max(raw).Seconds(), "raw-max-s")
	b.ReportMetric(percentile(fusebox, 0.5).Seconds()/percentile(raw, 0.5).Seconds(), "x-raw-p50")
	b.ReportMetric(0, "ns/op")
}

type lister struct {
	one *benchOne
	app circuit.App
}

func (l lister) ListCircuits(context.Context) ([]circuit.Circuit, error) {
	return []circuit.Circuit{l.one.ci}, nil
}
func (l lister) ListApps(context.Context) ([]circuit.App, error) { return []circuit.App{l.app}, nil }

// BenchmarkCheckpointHistoryCost counts the storage operations the
// checkpoint history spends on one Event Hubs function an hour (360
// passes, 10 s apart on a fake clock): a blob listing per pass, and a
// table write per pass while a partition moves, one per KeepAlive while
// none does. The listing's pages are counted as calls.
//
//	go test ./internal/bench -run '^$' -bench CheckpointHistoryCost -benchtime 1x
func BenchmarkCheckpointHistoryCost(b *testing.B) {
	for _, moving := range []bool{true, false} {
		lists, writes := 0, 0
		at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
		seq := int64(100)
		hosts := hostsFunc(func() []hostinsight.Checkpoint {
			lists++
			if moving {
				seq += 50
			}
			var cps []hostinsight.Checkpoint
			for p := range 32 {
				cps = append(cps, hostinsight.Checkpoint{Namespace: "ns", Hub: "orders", ConsumerGroup: "$default", Partition: strconv.Itoa(p), Sequence: seq, HasSequence: true})
			}
			return cps
		})
		ci := &benchOne{ci: circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{EventHub: "orders/$default"}}}
		s := &replay.Sampler{Circuits: lister{ci, circuit.App{ID: "orders", HostStorage: "set"}}, Hosts: hosts, History: putsFunc(func() { writes++ }), Now: func() time.Time { return at }}
		for range b.N * 360 {
			if err := s.Pass(context.Background(), lease.Fence{}); err != nil {
				b.Fatal(err)
			}
			at = at.Add(replay.Every)
		}
		label := "quiet"
		if moving {
			label = "moving"
		}
		b.ReportMetric(float64(lists)/float64(b.N), "lists/h")
		b.ReportMetric(float64(writes)/float64(b.N), "writes/h-"+label)
	}
	b.ReportMetric(0, "ns/op")
}

type hostsFunc func() []hostinsight.Checkpoint

func (h hostsFunc) Checkpoints(context.Context, circuit.App) ([]hostinsight.Checkpoint, error) {
	return h(), nil
}

type putsFunc func()

func (p putsFunc) Put(context.Context, string, string, replay.Sample) error { p(); return nil }
