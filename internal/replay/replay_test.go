package replay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2/checkpoints"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	bloblease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// hub is one test's Event Hub: its checkpoints written and read by the
// azeventhubs SDK's own blob checkpoint store, as a Go consumer would.
type hub struct {
	t          *testing.T
	ns, name   string
	partitions int
	store      *checkpoints.BlobStore
	blob       *azblob.Client
}

func newHub(t *testing.T, partitions int) *hub {
	t.Helper()
	c, store := testenv.CheckpointStore(t)
	name := testenv.Prefix(t)
	return &hub{t: t, ns: name + ".servicebus.windows.net", name: name, partitions: partitions, store: store, blob: c}
}

func offsetOf(seq int64) string { return strconv.FormatInt(seq*256, 10) }

// checkpoint sets every partition's checkpoint at seq, as the host does.
func (h *hub) checkpoint(seq int64) {
	h.t.Helper()
	for p := range h.partitions {
		h.checkpointOne(p, seq)
	}
}

func (h *hub) checkpointOne(p int, seq int64) {
	h.t.Helper()
	o := offsetOf(seq)
	if err := h.store.SetCheckpoint(h.t.Context(), azeventhubs.Checkpoint{FullyQualifiedNamespace: h.ns, EventHubName: h.name, ConsumerGroup: "$default",
		PartitionID: strconv.Itoa(p), SequenceNumber: &seq, Offset: &o}, nil); err != nil {
		h.t.Fatal(err)
	}
}

// claim claims partition p for a host, as a running processor does.
func (h *hub) claim(p int) {
	h.t.Helper()
	got, err := h.store.ClaimOwnership(h.t.Context(), []azeventhubs.Ownership{{FullyQualifiedNamespace: h.ns, EventHubName: h.name, ConsumerGroup: "$default",
		PartitionID: strconv.Itoa(p), OwnerID: "host-1"}}, nil)
	if err != nil || len(got) != 1 {
		h.t.Fatalf("claim partition %d: %v, %d claimed", p, err, len(got))
	}
}

// read is every partition's checkpoint as the official store reads it.
func (h *hub) read() map[string]azeventhubs.Checkpoint {
	h.t.Helper()
	cps, err := h.store.ListCheckpoints(h.t.Context(), h.ns, h.name, "$default", nil)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]azeventhubs.Checkpoint{}
	for _, c := range cps {
		out[c.PartitionID] = c
	}
	return out
}

type jsCheckpoint struct {
	Partition string
	Sequence  int64
	Offset    string
}

// readWithJavaScript lists the checkpoints with @azure/eventhubs-checkpointstore-blob.
func (h *hub) readWithJavaScript() []jsCheckpoint {
	h.t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		h.t.Fatal("node is not installed: run the tests with `make test`")
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	cmd := exec.CommandContext(h.t.Context(), node, filepath.Join(root, "scripts", "crosslang", "read-checkpoints.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CONNECTION_STRING="+testenv.ConnectionString(h.t), "NAMESPACE="+h.ns, "HUB="+h.name, "GROUP=$default")
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("the Node script failed: %v", err)
	}
	var cps []jsCheckpoint
	if err := json.Unmarshal(out, &cps); err != nil || len(cps) != h.partitions {
		h.t.Fatalf("the JavaScript store read %s: %v", out, err)
	}
	return cps
}

type fixture struct {
	hub     *hub
	ci      circuit.Circuit
	app     circuit.App
	replays *storage.Replays
	source  *hostinsight.Source
	resumed *switchRecord
	heads   map[string]hostinsight.Head
	first   time.Time
	later   time.Time // a minute after every blob was written: the host is quiet
	prefix  string    // of the tables
}

type switchRecord struct {
	mu      sync.Mutex
	reasons []string
}

func (s *switchRecord) Flip(_ context.Context, appID, function, actor, reason string, _ circuit.Action) (circuit.Circuit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reasons = append(s.reasons, reason)
	return circuit.Circuit{AppID: appID, Function: function, State: circuit.Closed}, nil
}

func (s *switchRecord) ResumeByLink(ctx context.Context, l circuit.LinkClaim, actor, reason string) (circuit.Circuit, error) {
	return s.Flip(ctx, l.AppID, l.Function, actor, reason, circuit.Resuming)
}

func (s *switchRecord) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reasons...)
}

type circuits struct{ ci circuit.Circuit }

func (c circuits) Get(context.Context, string, string) (circuit.Circuit, error) { return c.ci, nil }

type apps struct{ app circuit.App }

func (a apps) Get(context.Context, string) (circuit.App, error) { return a.app, nil }

type firstFailure struct{ at time.Time }

func (f firstFailure) First(context.Context, string, string, time.Time, time.Time) (time.Time, bool, error) {
	return f.at, true, nil
}

// withHeads is the host source with what Event Hubs holds filled in.
type withHeads struct {
	src   *hostinsight.Source
	heads map[string]hostinsight.Head
}

func (w withHeads) SnapshotAfter(ctx context.Context, app circuit.App, now, after time.Time) (hostinsight.Snapshot, bool) {
	snap, ok := w.src.SnapshotAfter(ctx, app, now, after)
	snap.Heads = w.heads
	return snap, ok
}

// newFixture: the host checkpointed every partition at 99, Fusebox
// sampled that, then failures began and the host checkpointed past them
// to 199 before the circuit opened.
func newFixture(t *testing.T, partitions int) *fixture {
	t.Helper()
	h := newHub(t, partitions)
	svc, prefix := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableReplays); err != nil {
		t.Fatal(err)
	}
	f := &fixture{hub: h, replays: storage.New(svc).Replays, resumed: &switchRecord{}, heads: map[string]hostinsight.Head{}, prefix: prefix}
	f.app = circuit.App{ID: "orders", HostStorage: testenv.ConnectionString(t), Switch: circuit.SwitchLocal}
	f.source = &hostinsight.Source{Endpoints: egress.Endpoints{Development: true}, Transport: egress.Policy{AllowLoopback: true}.Transporter(), TTL: time.Nanosecond}
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	h.checkpoint(99)
	cps, err := f.source.Checkpoints(t.Context(), f.app)
	if err != nil {
		t.Fatal(err)
	}
	var marks []replay.Mark
	for _, c := range cps {
		if c.Hub == h.name {
			marks = append(marks, replay.MarkOf(c))
		}
	}
	if len(marks) != partitions {
		t.Fatalf("sampled %d partitions, want %d", len(marks), partitions)
	}
	if err := f.replays.Put(t.Context(), f.app.ID, "ProcessOrders", replay.Sample{At: base, Marks: marks}); err != nil {
		t.Fatal(err)
	}
	f.first = base.Add(30 * time.Second)
	h.checkpoint(199)
	f.ci = circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{Window: time.Minute, EventHub: h.name + "/$default"},
		State: circuit.Open, Episode: 3, ChangedAt: base.Add(time.Minute)}
	f.ci.AppliedEpisode, f.ci.AppliedAt = 3, base.Add(time.Minute)
	f.later = time.Now().Add(time.Minute)
	return f
}

func (f *fixture) service(blobs func(circuit.App) (replay.Blobs, error)) *replay.Service {
	if blobs == nil {
		blobs = func(app circuit.App) (replay.Blobs, error) {
			c, err := f.source.Client(app)
			return replay.Checkpoints{Client: c}, err
		}
	}
	return &replay.Service{Circuits: circuits{f.ci}, Apps: apps{f.app}, Switch: f.resumed, Records: f.replays, History: f.replays,
		Failures: firstFailure{f.first}, Hosts: withHeads{f.source, f.heads}, Blobs: blobs, Now: func() time.Time { return f.later }}
}

func TestARewoundCheckpointReadsBackExactlyThroughTheOfficialStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	_, rec, err := f.service(nil).Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range f.hub.read() {
		if c.SequenceNumber == nil || *c.SequenceNumber != 99 || c.Offset == nil || *c.Offset != offsetOf(99) {
			t.Errorf("partition %s reads back as sequence %v offset %v, want 99 and %s: the position before the first failure", p, deref(c.SequenceNumber), deref(c.Offset), offsetOf(99))
		}
	}
	// And as a Node.js consumer reads them, through the JavaScript SDK's
	// checkpoint store.
	for _, c := range f.hub.readWithJavaScript() {
		if c.Sequence != 99 || c.Offset != offsetOf(99) {
			t.Errorf("the JavaScript store reads partition %s at %d/%s, want 99/%s", c.Partition, c.Sequence, c.Offset, offsetOf(99))
		}
	}
	replayed, lost, refused := rec.Outcome()
	if replayed != 400 || lost != 0 || len(refused) != 0 {
		t.Errorf("outcome: %d replayed, %d lost, %d refused; want 400 (100 a partition), 0, 0", replayed, lost, len(refused))
	}
	calls := f.resumed.calls()
	if len(calls) != 1 || !strings.Contains(calls[0], "replayed 400 events from before the first failure on 4 partitions") {
		t.Errorf("the trigger was asked on with %q; want once, saying what was replayed", calls)
	}
	stored, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3)
	if err != nil || stored.Finished.IsZero() || stored.Open() {
		t.Errorf("the stored record: finished %v, open %v, %v; want finished", stored.Finished, stored.Open(), err)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// host is the app's blobs, with a host that starts and claims partition
// claimAt between Fusebox's plan and its write, and an instance that
// stops before writing failAt.
type host struct {
	replay.Blobs
	hub     *hub
	claimAt string
	failAt  string
	mu      sync.Mutex
	reads   map[string]int
	writes  []string
}

// Claimed is asked just before a partition is written: the host claims
// partition claimAt then.
func (h *host) Claimed(ctx context.Context, key string, legacy bool) (time.Time, bool, error) {
	h.mu.Lock()
	h.reads[key]++
	first := h.reads[key] == 1
	h.mu.Unlock()
	if first && h.claimAt != "" && strings.HasSuffix(key, "/"+h.claimAt) {
		p, _ := strconv.Atoi(h.claimAt)
		h.hub.claim(p)
	}
	return h.Blobs.Claimed(ctx, key, legacy)
}

func (h *host) Write(ctx context.Context, key string, target replay.Mark, etag string) error {
	if h.failAt != "" && strings.HasSuffix(key, "/"+h.failAt) {
		return errors.New("the instance stopped")
	}
	err := h.Blobs.Write(ctx, key, target, etag)
	if err == nil {
		h.mu.Lock()
		h.writes = append(h.writes, key[strings.LastIndex(key, "/")+1:])
		h.mu.Unlock()
	}
	return err
}

func (f *fixture) host(claimAt, failAt string) (*host, func(circuit.App) (replay.Blobs, error)) {
	h := &host{hub: f.hub, claimAt: claimAt, failAt: failAt, reads: map[string]int{}}
	return h, func(app circuit.App) (replay.Blobs, error) {
		c, err := f.source.Client(app)
		h.Blobs = replay.Checkpoints{Client: c}
		return h, err
	}
}

func TestAPartitionTheHostClaimsMidwayIsRefusedNamedAndNotWritten(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	h, blobs := f.host("2", "")
	_, rec, err := f.service(blobs).Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := f.hub.read()
	for p, want := range map[string]int64{"0": 99, "1": 99, "2": 199, "3": 99} {
		if c := got[p]; c.SequenceNumber == nil || *c.SequenceNumber != want {
			t.Errorf("partition %s: sequence %v, want %d", p, deref(c.SequenceNumber), want)
		}
	}
	if strings.Contains(strings.Join(h.writes, ","), "2") {
		t.Errorf("partition 2 was written (%v) after a host claimed it", h.writes)
	}
	_, lost, refused := rec.Outcome()
	if len(refused) != 1 || refused[0].Partition != "2" || !strings.Contains(refused[0].Reason, "claimed") || lost != 100 {
		t.Errorf("refused %+v, lost %d; want partition 2 named as claimed, its 100 events lost", refused, lost)
	}
	if calls := f.resumed.calls(); len(calls) != 1 || !strings.Contains(calls[0], "1 partitions left where they stopped") {
		t.Errorf("resumed with %q; want it to say a partition was left", calls)
	}
}

func TestAResumeStoppedMidwayIsFinishedFromItsPlanByAnotherInstance(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	_, dying := f.host("", "2")
	if _, _, err := f.service(dying).Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil); err == nil {
		t.Fatal("the resume whose instance stopped succeeded")
	}
	if calls := f.resumed.calls(); len(calls) != 0 {
		t.Fatalf("the trigger was asked on (%q) before every partition was written", calls)
	}
	rec, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3)
	if err != nil || !rec.Open() {
		t.Fatalf("the record after the stop: open %v, %v; want an open plan", rec.Open(), err)
	}
	// The host moves on meanwhile? It does not: the trigger is off. Another
	// instance runs the resume again.
	h, blobs := f.host("", "")
	_, rec, err = f.service(blobs).Resume(t.Context(), "orders", "ProcessOrders", "bob", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h.writes, ",") != "2" {
		t.Errorf("the second run wrote partitions %v; want only 2, the one the first did not", h.writes)
	}
	for p, c := range f.hub.read() {
		if c.SequenceNumber == nil || *c.SequenceNumber != 99 {
			t.Errorf("partition %s: sequence %v, want 99", p, deref(c.SequenceNumber))
		}
	}
	if replayed, _, _ := rec.Outcome(); replayed != 400 || rec.Actor != "alice" {
		t.Errorf("replayed %d by %q; want 400, by the plan's maker", replayed, rec.Actor)
	}
	if calls := f.resumed.calls(); len(calls) != 1 {
		t.Errorf("the trigger was asked on %d times, want once", len(calls))
	}
}

func TestARetentionThatPassedWhileOpenIsNeverRewoundBehind(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	// Retention dropped events up to 149 on partition 0 while the circuit
	// was open; a later sample saw it at 160. Partition 1 lost up to 120
	// and no later sample is still inside the retention.
	key := func(p int) string { return fmt.Sprintf("%s/%s/$default/%d", f.hub.ns, f.hub.name, p) }
	f.heads[key(0)] = hostinsight.Head{First: 150, Last: 400}
	f.heads[key(1)] = hostinsight.Head{First: 121, Last: 400}
	cps, err := f.source.Checkpoints(t.Context(), f.app)
	if err != nil {
		t.Fatal(err)
	}
	var marks []replay.Mark
	for _, c := range cps {
		if c.Hub == f.hub.name {
			m := replay.MarkOf(c)
			if c.Partition == "0" {
				m.Sequence, m.Offset = 160, offsetOf(160)
			} else {
				m.Sequence, m.Offset = 110, offsetOf(110)
			}
			marks = append(marks, m)
		}
	}
	if err := f.replays.Put(t.Context(), "orders", "ProcessOrders", replay.Sample{At: f.first.Add(5 * time.Second), Marks: marks}); err != nil {
		t.Fatal(err)
	}
	_, rec, err := f.service(nil).Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := f.hub.read()
	if c := got["0"]; *c.SequenceNumber != 160 || *c.Offset != offsetOf(160) {
		t.Errorf("partition 0 rewound to %d/%s; want 160, the first sampled checkpoint still inside retention", *c.SequenceNumber, *c.Offset)
	}
	if c := got["1"]; *c.SequenceNumber != 199 {
		t.Errorf("partition 1 moved to %d; want it left at 199: no position inside retention is known", *c.SequenceNumber)
	}
	replayed, lost, refused := rec.Outcome()
	if replayed != 39 || lost != 61+100 || len(refused) != 1 {
		t.Errorf("replayed %d, lost %d, %d refused; want 39 (160..199), 161 (61 past retention on 0, all 100 of 1), 1", replayed, lost, len(refused))
	}
	if !strings.Contains(rec.Partitions[1].Describe(), "already past the hub's retention") {
		t.Errorf("partition 1 is described as %q", rec.Partitions[1].Describe())
	}
}

func TestAHostThatWroteAMomentAgoIsWaitedForAndNothingIsWritten(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	svc := f.service(nil)
	svc.Now = time.Now // the fixture's host checkpointed just now
	_, _, err := svc.Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil)
	var nr replay.ErrNotReady
	if !errors.As(err, &nr) || !strings.Contains(nr.Why, "try again shortly") {
		t.Fatalf("resume while the host was writing: %v; want a wait", err)
	}
	for p, c := range f.hub.read() {
		if *c.SequenceNumber != 199 {
			t.Errorf("partition %s moved to %d while the host was running", p, *c.SequenceNumber)
		}
	}
	if calls := f.resumed.calls(); len(calls) != 0 {
		t.Errorf("the trigger was asked on: %q", calls)
	}
	if _, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3); err == nil {
		t.Error("a plan was recorded though nothing could be planned")
	}
}

// The v4 extension's layout: one JSON blob per partition, its other
// fields kept as they were, and a partition whose blob a host leases
// (the v4 processor's ownership) is in use: the resume waits.
func TestALegacyCheckpointIsRewoundInItsOwnLayout(t *testing.T) {
	t.Parallel()
	c, _ := testenv.CheckpointStore(t)
	name := testenv.Prefix(t)
	ns := name + ".servicebus.windows.net"
	blobName := func(p int) string { return fmt.Sprintf("%s/%s/$default/%d", ns, name, p) }
	put := func(p int, seq int64) {
		t.Helper()
		body := fmt.Sprintf(`{"PartitionId":"%d","Owner":"host-1","Token":"t-%d","Epoch":7,"Offset":"%s","SequenceNumber":%d}`, p, p, offsetOf(seq), seq)
		if _, err := c.UploadBuffer(t.Context(), hostinsight.EventHubContainer, blobName(p), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableReplays); err != nil {
		t.Fatal(err)
	}
	replays := storage.New(svc).Replays
	app := circuit.App{ID: "orders", HostStorage: testenv.ConnectionString(t), Switch: circuit.SwitchLocal}
	source := &hostinsight.Source{Endpoints: egress.Endpoints{Development: true}, Transport: egress.Policy{AllowLoopback: true}.Transporter(), TTL: time.Nanosecond}
	base := time.Now().Add(-10 * time.Minute)
	var marks []replay.Mark
	for p := range 2 {
		put(p, 99)
		marks = append(marks, replay.Mark{Key: blobName(p), Sequence: 99, HasSequence: true, Offset: offsetOf(99), Legacy: true})
	}
	if err := replays.Put(t.Context(), "orders", "ProcessOrders", replay.Sample{At: base, Marks: marks}); err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		put(p, 199)
	}
	ci := circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{Window: time.Minute, EventHub: name + "/$default"},
		State: circuit.Open, Episode: 3, ChangedAt: base.Add(time.Minute)}
	ci.AppliedEpisode = 3
	sw := &switchRecord{}
	svcR := &replay.Service{Circuits: circuits{ci}, Apps: apps{app}, Switch: sw, Records: replays, History: replays,
		Failures: firstFailure{base.Add(30 * time.Second)}, Hosts: withHeads{source, nil}, Now: func() time.Time { return time.Now().Add(time.Minute) },
		Blobs: func(a circuit.App) (replay.Blobs, error) {
			cl, err := source.Client(a)
			return replay.Checkpoints{Client: cl}, err
		}}
	// A host holds partition 1's lease: it is running.
	lc, err := bloblease.NewBlobClient(c.ServiceClient().NewContainerClient(hostinsight.EventHubContainer).NewBlobClient(blobName(1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(t.Context(), 15, nil); err != nil {
		t.Fatal(err)
	}
	var nr replay.ErrNotReady
	if _, _, err := svcR.Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil); !errors.As(err, &nr) || !strings.Contains(nr.Why, "lease") {
		t.Fatalf("a resume while a host holds a lease: %v; want a wait that says so", err)
	}
	if _, err := lc.ReleaseLease(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svcR.Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil); err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		resp, err := c.DownloadStream(t.Context(), hostinsight.EventHubContainer, blobName(p), nil)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if body["SequenceNumber"] != float64(99) || body["Offset"] != offsetOf(99) || body["Owner"] != "host-1" || body["Token"] != fmt.Sprintf("t-%d", p) || body["Epoch"] != float64(7) {
			t.Errorf("partition %d after the rewind: %v; want sequence 99, offset %s, the rest as it was", p, body, offsetOf(99))
		}
	}
}

type flipLog []circuit.Flip

func (l flipLog) Flips(context.Context, string, string, int) ([]circuit.Flip, error) { return l, nil }

type firstFrom struct{ from *time.Time }

func (f firstFrom) First(_ context.Context, _, _ string, from, _ time.Time) (time.Time, bool, error) {
	*f.from = from
	return time.Time{}, false, nil
}

// A trip that a throttle came first to: the function kept failing, and
// kept checkpointing past its failures, all the while the throttle held,
// so the first failure is looked for from a window before the throttle
// began, not before the trip; but never before the change that came
// before the trouble (a resume): those failures belong to an episode that
// is over.
func TestTheFirstFailureIsLookedForWithinTheTroubleThatTripped(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	var from time.Time
	ci := circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{Window: 30 * time.Second, EventHub: "orders"},
		State: circuit.Open, Episode: 7, ChangedAt: t0.Add(10 * time.Minute)}
	log := flipLog{
		{Episode: 7, From: circuit.Throttled, To: circuit.Open, At: t0.Add(10 * time.Minute)},
		{Episode: 6, From: circuit.Throttled, To: circuit.Throttled, At: t0.Add(5 * time.Minute)},
		{Episode: 5, From: circuit.Closed, To: circuit.Throttled, At: t0},
		{Episode: 4, From: circuit.Open, To: circuit.Closed, At: t0.Add(-time.Hour)},
	}
	svc := &replay.Service{Flips: log, Records: noRecords{}, Failures: firstFrom{&from}, History: emptyHistory{}, Hosts: noHost{}, Now: func() time.Time { return t0.Add(11 * time.Minute) }}
	for _, tc := range []struct {
		name   string
		change func()
		want   time.Time
	}{
		{"throttled for ten minutes, then tripped", func() {}, t0.Add(-30 * time.Second)},
		{"resumed 10 s before the throttle began", func() { log[3].At = t0.Add(-10 * time.Second) }, t0.Add(-10 * time.Second)},
		{"tripped straight from closed", func() { log[0].From = circuit.Closed; log[3].At = t0.Add(-time.Hour) }, ci.ChangedAt.Add(-30 * time.Second)},
		{"tripped from closed 10 s after a resume", func() {
			log[1] = circuit.Flip{Episode: 6, From: circuit.Open, To: circuit.Closed, At: ci.ChangedAt.Add(-10 * time.Second)}
		}, ci.ChangedAt.Add(-10 * time.Second)},
	} {
		tc.change()
		if _, err := svc.Of(t.Context(), ci, circuit.App{}); err != nil {
			t.Fatal(err)
		}
		if !from.Equal(tc.want) {
			t.Errorf("%s: the first failure was looked for from %s, want %s", tc.name, from, tc.want)
		}
	}
}

type emptyHistory struct{}

func (emptyHistory) Before(context.Context, string, string, time.Time) (replay.Sample, bool, error) {
	return replay.Sample{}, false, nil
}

func (emptyHistory) After(context.Context, string, string, time.Time, time.Time, int) ([]replay.Sample, error) {
	return nil, nil
}

type noHost struct{}

func (noHost) SnapshotAfter(context.Context, circuit.App, time.Time, time.Time) (hostinsight.Snapshot, bool) {
	return hostinsight.Snapshot{}, false
}

type noRecords struct{}

func (noRecords) Get(context.Context, string, string, int64) (replay.Record, error) {
	return replay.Record{}, tablestore.ErrNotFound
}
func (noRecords) Save(context.Context, *replay.Record) error { return nil }

// TestMain lets the test binary be the instance that is killed midway.
func TestMain(m *testing.M) {
	if os.Getenv("FUSEBOX_REPLAY_CHILD") != "" {
		resumeUntilKilled()
		return
	}
	os.Exit(m.Run())
}

// resumeUntilKilled resumes the circuit the parent set up, writing
// partitions 0 and 1 and then stopping before the next write, where the
// parent kills it.
func resumeUntilKilled() {
	env := func(k string) string { return os.Getenv("FUSEBOX_REPLAY_" + k) }
	unix := func(k string) time.Time { n, _ := strconv.ParseInt(env(k), 10, 64); return time.Unix(n, 0) }
	svc, err := tablestore.NewFromConnectionString(env("CONN"), tablestore.Options{Prefix: env("PREFIX")})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	f := &fixture{hub: &hub{ns: env("NS"), name: env("HUB")}, replays: storage.New(svc).Replays, resumed: &switchRecord{}, heads: map[string]hostinsight.Head{},
		app: circuit.App{ID: "orders", HostStorage: env("CONN"), Switch: circuit.SwitchLocal}, first: unix("FIRST"), later: time.Now().Add(time.Minute),
		source: &hostinsight.Source{Endpoints: egress.Endpoints{Development: true}, Transport: egress.Policy{AllowLoopback: true}.Transporter(), TTL: time.Nanosecond}}
	f.ci = circuit.Circuit{AppID: "orders", Function: "ProcessOrders", Settings: circuit.Settings{Window: time.Minute, EventHub: f.hub.name + "/$default"},
		State: circuit.Open, Episode: 3, ChangedAt: unix("CHANGED")}
	f.ci.AppliedEpisode = 3
	svcR := f.service(func(app circuit.App) (replay.Blobs, error) {
		c, err := f.source.Client(app)
		return stopAt{replay.Checkpoints{Client: c}}, err
	})
	_, _, err = svcR.Resume(context.Background(), "orders", "ProcessOrders", "alice", "", nil)
	fmt.Println("ended", err) // not reached: the parent kills it first
}

// stopAt writes partitions 0 and 1, says so, and holds every other write
// until the process is killed.
type stopAt struct{ replay.Blobs }

func (s stopAt) Write(ctx context.Context, key string, target replay.Mark, etag string) error {
	p := key[strings.LastIndex(key, "/")+1:]
	if p != "0" && p != "1" {
		fmt.Println("holding", p)
		select {} // killed here
	}
	err := s.Blobs.Write(ctx, key, target, etag)
	fmt.Println("wrote", p, err)
	return err
}

// An instance killed (SIGKILL) between two partitions' writes leaves its
// plan and what it wrote; another instance's resume finishes the rest
// from the plan, writes only those, and only then asks the trigger on.
func TestAResumeWhoseInstanceIsKilledMidwayIsFinishedFromItsPlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	child := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "FUSEBOX_REPLAY_CHILD=1", "FUSEBOX_REPLAY_CONN="+testenv.ConnectionString(t), "FUSEBOX_REPLAY_PREFIX="+f.prefix,
		"FUSEBOX_REPLAY_NS="+f.hub.ns, "FUSEBOX_REPLAY_HUB="+f.hub.name,
		"FUSEBOX_REPLAY_FIRST="+strconv.FormatInt(f.first.Unix(), 10), "FUSEBOX_REPLAY_CHANGED="+strconv.FormatInt(f.ci.ChangedAt.Unix(), 10))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	wrote, holding := 0, 0
	for (wrote < 2 || holding < 2) && lines.Scan() {
		switch fs := strings.Fields(lines.Text()); {
		case len(fs) >= 2 && fs[0] == "wrote":
			if len(fs) > 2 && fs[2] != "<nil>" {
				t.Fatalf("the child's write failed: %s", lines.Text())
			}
			wrote++
		case len(fs) == 2 && fs[0] == "holding":
			holding++
		default:
			t.Fatalf("the child says %q", lines.Text())
		}
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if wrote != 2 || holding != 2 {
		t.Fatalf("killed after %d writes with %d held; want 2 and 2", wrote, holding)
	}
	rec, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3)
	if err != nil || !rec.Open() {
		t.Fatalf("after the kill: open plan %v, %v", rec.Open(), err)
	}
	h, blobs := f.host("", "")
	_, rec, err = f.service(blobs).Resume(t.Context(), "orders", "ProcessOrders", "bob", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(h.writes)
	if strings.Join(h.writes, ",") != "2,3" {
		t.Errorf("the second instance wrote partitions %v; want 2 and 3, those the killed one had not", h.writes)
	}
	for p, c := range f.hub.read() {
		if *c.SequenceNumber != 99 {
			t.Errorf("partition %s at %d, want 99", p, *c.SequenceNumber)
		}
	}
	if replayed, _, refused := rec.Outcome(); replayed != 400 || len(refused) != 0 || rec.Finished.IsZero() {
		t.Errorf("the record: %d replayed, %d refused, finished %v; want 400, none, finished", replayed, len(refused), rec.Finished)
	}
	if calls := f.resumed.calls(); len(calls) != 1 {
		t.Errorf("the trigger was asked on %d times, want once (by the second instance)", len(calls))
	}
}

// Resuming where it stopped, by hand or by a trial, gives up the skipped
// events: the history loop finds the replay that will not run, records
// them lost and counts them once; an open circuit's replay is left alone.
func TestAReplayThatWillNotRunIsSettledAsLostOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	var replayedN, lostN int64
	svc := f.service(nil)
	svc.Unsettled = f.replays.Unsettled
	svc.Counted = func(r, l int64) { replayedN += r; lostN += l }
	if err := svc.Place(t.Context(), f.ci, f.app); err != nil {
		t.Fatal(err)
	}
	if err := svc.Settle(t.Context(), "orders", []circuit.Circuit{f.ci}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3); !rec.Unsettled() || lostN != 0 {
		t.Fatalf("an open circuit's replay was settled: %+v, %d counted lost", rec.Settled, lostN)
	}
	resumed := f.ci
	resumed.State, resumed.Episode = circuit.Closed, 4 // resumed where it stopped
	for range 2 {
		if err := svc.Settle(t.Context(), "orders", []circuit.Circuit{resumed}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3)
	if err != nil || rec.Unsettled() || rec.Forsaken != 200 || lostN != 200 || replayedN != 0 {
		t.Errorf("after the resume where it stopped: settled %v, forsaken %d, counted lost %d, replayed %d; want settled, 200, 200 once, 0", rec.Settled, rec.Forsaken, lostN, replayedN)
	}
}

// The host checkpoints its last batches as it stops, after the history
// placed the point: the replay runs from the point to where the
// checkpoint stands at the resume, losing none of those either.
func TestCheckpointsTheHostWroteAsItStoppedAreReplayedToo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	svc := f.service(nil)
	if err := svc.Place(t.Context(), f.ci, f.app); err != nil {
		t.Fatal(err)
	}
	f.hub.checkpoint(250) // its last batches, failed and checkpointed past
	f.later = time.Now().Add(time.Minute)
	_, rec, err := svc.Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range f.hub.read() {
		if *c.SequenceNumber != 99 {
			t.Errorf("partition %s at %d, want 99", p, *c.SequenceNumber)
		}
	}
	if replayed, _, refused := rec.Outcome(); replayed != 2*151 || len(refused) != 0 {
		t.Errorf("replayed %d with %d refused; want %d (100..250 on each partition), none refused", replayed, len(refused), 2*151)
	}
}

// onceSwitch turns the trigger on once; a second resume finds the circuit
// closed, as the circuit service answers.
type onceSwitch struct {
	mu    sync.Mutex
	calls int
}

func (s *onceSwitch) Flip(_ context.Context, appID, function, _, _ string, _ circuit.Action) (circuit.Circuit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls > 1 {
		return circuit.Circuit{}, circuit.ErrNotOpen
	}
	return circuit.Circuit{AppID: appID, Function: function, State: circuit.Closed}, nil
}

func (s *onceSwitch) ResumeByLink(ctx context.Context, l circuit.LinkClaim, actor, reason string) (circuit.Circuit, error) {
	return s.Flip(ctx, l.AppID, l.Function, actor, reason, circuit.Resuming)
}

// Two people press "resume from before the first failure" at once, on two
// instances: one plan is recorded and both run it; every partition ends
// at the point, none is refused as moved (the other's write is told from
// the host's), and the trigger is turned on once.
func TestTwoResumesAtOnceRunOnePlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	sw := &onceSwitch{}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	recs := make([]replay.Record, 2)
	for i := range 2 {
		svc := f.service(nil)
		svc.Switch = sw
		wg.Go(func() {
			_, recs[i], errs[i] = svc.Resume(t.Context(), "orders", "ProcessOrders", fmt.Sprintf("person-%d", i), "", nil)
		})
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, circuit.ErrNotOpen):
			t.Errorf("resume %d: %v; want success or the circuit already resumed", i, err)
		}
	}
	if ok < 1 || sw.calls > 2 {
		t.Errorf("%d resumes succeeded, the switch was called %d times", ok, sw.calls)
	}
	for p, c := range f.hub.read() {
		if *c.SequenceNumber != 99 {
			t.Errorf("partition %s at %d, want 99", p, *c.SequenceNumber)
		}
	}
	rec, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3)
	if err != nil {
		t.Fatal(err)
	}
	if replayed, _, refused := rec.Outcome(); len(refused) != 0 || replayed != 400 {
		t.Errorf("the stored record: %d replayed, refused %+v; want 400, none", replayed, refused)
	}
}

// A point that could not be placed because the host's storage did not
// answer is not stored: the next pass places it, once the storage
// answers.
func TestAPointTheStorageDidNotAnswerForIsPlacedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	svc := f.service(nil)
	svc.Hosts = noHost{} // the account did not answer
	if err := svc.Place(t.Context(), f.ci, f.app); err != nil {
		t.Fatal(err)
	}
	if _, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3); !errors.Is(err, tablestore.ErrNotFound) {
		t.Fatalf("a point placed without the host's checkpoints was stored: %v", err)
	}
	svc.Hosts = withHeads{f.source, f.heads}
	if err := svc.Place(t.Context(), f.ci, f.app); err != nil {
		t.Fatal(err)
	}
	rec, err := f.replays.Get(t.Context(), "orders", "ProcessOrders", 3)
	if err != nil || rec.Problem != "" || len(rec.Partitions) != 2 {
		t.Errorf("placed again: %+v, %v; want both partitions", rec.Point, err)
	}
}

// A checkpoint blob something else rewrote so it no longer reads costs
// its own partition: refused and named; the others are moved back and the
// trigger comes on.
func TestACheckpointThatDoesNotReadCostsOnlyItsPartition(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	svc := f.service(nil)
	if err := svc.Place(t.Context(), f.ci, f.app); err != nil {
		t.Fatal(err)
	}
	lots := "lots"
	name := fmt.Sprintf("%s/%s/$default/checkpoint/1", f.hub.ns, f.hub.name)
	if _, err := f.hub.blob.ServiceClient().NewContainerClient(hostinsight.EventHubContainer).NewBlobClient(name).SetMetadata(t.Context(),
		map[string]*string{"sequencenumber": &lots}, nil); err != nil {
		t.Fatal(err)
	}
	f.later = time.Now().Add(time.Minute)
	_, rec, err := svc.Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil)
	if err != nil {
		t.Fatalf("one partition's unreadable checkpoint stopped the resume: %v", err)
	}
	_, lost, refused := rec.Outcome()
	if len(refused) != 1 || refused[0].Partition != "1" || !strings.Contains(refused[0].Reason, "does not read") || lost != 100 {
		t.Errorf("refused %+v, lost %d; want partition 1 named, its 100 events lost", refused, lost)
	}
	if calls := f.resumed.calls(); len(calls) != 1 {
		t.Errorf("the trigger was asked on %d times, want once", len(calls))
	}
}

// placedMeanwhile is the episode's records as the checkpoint history's
// loop races a resume: the first read finds no record, and the loop's own
// Place stores the point just after it.
type placedMeanwhile struct {
	replay.Records
	place func() error
	once  sync.Once
	err   error
}

func (p *placedMeanwhile) Get(ctx context.Context, appID, function string, episode int64) (replay.Record, error) {
	rec, err := p.Records.Get(ctx, appID, function, episode)
	if errors.Is(err, tablestore.ErrNotFound) {
		p.once.Do(func() { p.err = p.place() })
	}
	return rec, err
}

// A resume pressed the moment the checkpoint history's loop places the
// episode's point (the loop runs every 10 s, a resume can come at once
// after a trip) plans over the point the loop stored, instead of stopping
// with "storage did not answer as expected" (the race a CI run met).
func TestAResumeAsTheLoopPlacesThePointStillRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	loop := f.service(nil)
	svc := f.service(nil)
	raced := &placedMeanwhile{Records: f.replays, place: func() error { return loop.Place(context.Background(), f.ci, f.app) }}
	svc.Records = raced
	_, rec, err := svc.Resume(t.Context(), "orders", "ProcessOrders", "alice", "", nil)
	if raced.err != nil {
		t.Fatalf("the loop's Place: %v", raced.err)
	}
	if err != nil {
		t.Fatalf("the resume stopped: %v", err)
	}
	if replayed, lost, refused := rec.Outcome(); replayed != 200 || lost != 0 || len(refused) != 0 {
		t.Errorf("outcome: %d replayed, %d lost, %d refused; want 200, 0, 0", replayed, lost, len(refused))
	}
}
