package hostinsight_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/testenv"
)

func TestHostIDIsDerivedAsTheHostDoes(t *testing.T) {
	for _, tc := range []struct{ setting, site, slot, want string }{
		{"", "Func-Orders", "", "func-orders"},
		{"", "func-orders", "staging", "func-orders-staging"},
		{"", "func-orders", "production", "func-orders"},
		{"", "a-very-long-function-app-name-for-orders", "", "a-very-long-function-app-name-fo"},
		{"", "function-app-name-thirty-one-ch-x", "", "function-app-name-thirty-one-ch"}, // cut at 32 leaves a trailing '-'
		{"explicit-id", "func-orders", "staging", "explicit-id"},
	} {
		if got := hostinsight.HostID(tc.setting, tc.site, tc.slot); got != tc.want {
			t.Errorf("HostID(%q, %q, %q) = %q, want %q", tc.setting, tc.site, tc.slot, got, tc.want)
		}
	}
}

type account struct {
	t *testing.T
	c *azblob.Client
}

func newAccount(t *testing.T) account {
	c, err := azblob.NewClientFromConnectionString(testenv.ConnectionString(t), &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{hostinsight.EventHubContainer, hostinsight.HostsContainer} {
		if _, err := c.CreateContainer(t.Context(), name, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			t.Fatal(err)
		}
	}
	return account{t, c}
}

func (a account) put(container, name, body string, meta map[string]string) {
	a.t.Helper()
	m := map[string]*string{}
	for k, v := range meta {
		m[k] = &v
	}
	if _, err := a.c.UploadBuffer(a.t.Context(), container, name, []byte(body), &azblob.UploadBufferOptions{Metadata: m}); err != nil {
		a.t.Fatal(err)
	}
}

// Blobs in each format the host writes, and ones it would never write,
// read as what they are; a bad one is named with its reason and the rest
// still reads.
func TestCheckpointsInEveryLayout(t *testing.T) {
	a := newAccount(t)
	ns := strings.ToLower(strings.ReplaceAll(testenv.Prefix(t), "_", "")) + ".servicebus.windows.net"
	before := time.Now().Add(-time.Second)
	a.put(hostinsight.EventHubContainer, ns+"/orders/$default/checkpoint/0", "", map[string]string{"sequencenumber": "1041", "offset": "88000"})
	a.put(hostinsight.EventHubContainer, ns+"/orders/$default/checkpoint/1", "", map[string]string{"sequencenumber": "977", "offset": ""})
	a.put(hostinsight.EventHubContainer, ns+"/orders/$default/checkpoint/10", "", nil) // never checkpointed
	a.put(hostinsight.EventHubContainer, ns+"/orders/$default/checkpoint/2", "", map[string]string{"sequencenumber": "lots"})
	a.put(hostinsight.EventHubContainer, ns+"/orders/$default/ownership/0", "", map[string]string{"ownerid": "instance-a"})
	a.put(hostinsight.EventHubContainer, ns+"/legacy/$default/3", `{"PartitionId":"3","Owner":"instance-b","Token":"t","Epoch":2,"Offset":"123","SequenceNumber":55}`, nil)
	a.put(hostinsight.EventHubContainer, ns+"/legacy/$default/4", `{"PartitionId":`, nil)
	a.put(hostinsight.EventHubContainer, ns+"/legacy/$default/5", `{"PartitionId":"5","SequenceNumber":-7}`, nil)

	r := hostinsight.NewReader(a.c, "func-orders")
	cps, problems, err := r.Checkpoints(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var mine []hostinsight.Checkpoint
	for _, c := range cps {
		if c.Namespace == ns {
			mine = append(mine, c)
		}
	}
	var got []string
	for _, c := range mine {
		seq := "-"
		if c.HasSequence {
			seq = strconv.FormatInt(c.Sequence, 10)
		}
		got = append(got, c.Hub+"/"+c.Partition+"="+seq+"@"+c.Offset+"~"+c.Owner)
		if c.Moved.Before(before) {
			t.Errorf("%s moved at %s, before it was written", c.Key(), c.Moved)
		}
	}
	want := "legacy/3=55@123~instance-b orders/0=1041@88000~instance-a orders/1=977@~ orders/10=-@~"
	if strings.Join(got, " ") != want {
		t.Errorf("checkpoints:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	var bad []string
	for _, p := range problems {
		if strings.Contains(p.Blob, ns) {
			bad = append(bad, p.Blob[strings.LastIndex(p.Blob, ns)+len(ns):]+": "+p.Reason)
		}
	}
	all := strings.Join(bad, "\n")
	if len(bad) != 3 || !strings.Contains(all, `sequencenumber "lots"`) || !strings.Contains(all, "/legacy/$default/4: not a checkpoint") ||
		!strings.Contains(all, "/legacy/$default/5: SequenceNumber -7 is not a sequence number") {
		t.Errorf("problems = %v, want the bad sequence numbers in both layouts and the broken JSON", bad)
	}
}

func TestConcurrencyTimersAndLocks(t *testing.T) {
	a := newAccount(t)
	host := "h" + strings.ToLower(strings.ReplaceAll(testenv.Prefix(t), "_", ""))
	r := hostinsight.NewReader(a.c, host)

	if _, err := r.Concurrency(t.Context()); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Errorf("no snapshot yet: %v", err)
	}
	a.put(hostinsight.HostsContainer, "concurrency/"+host+"/concurrencyStatus.json", "", nil)
	if _, err := r.Concurrency(t.Context()); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("a 0-byte snapshot: %v, want 'empty'", err)
	}
	a.put(hostinsight.HostsContainer, "concurrency/"+host+"/concurrencyStatus.json",
		`{"Timestamp":"2026-12-01T09:00:00Z","NumberOfCores":4,"FunctionSnapshots":{"Orders.Functions.ProcessOrders":{"Concurrency":16},"SyncInventory":{"Concurrency":1}}}`, nil)
	c, err := r.Concurrency(t.Context())
	if err != nil || c.Cores != 4 || c.Functions["ProcessOrders"] != 16 || c.Functions["SyncInventory"] != 1 || !c.Timestamp.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("Concurrency = %+v, %v", c, err)
	}

	a.put(hostinsight.HostsContainer, "timers/"+host+"/Host.Functions.NightlySalesSummary/status",
		`{"Last":"2026-12-01T01:00:00Z","Next":"2026-12-02T01:00:00Z","LastUpdated":"2026-12-01T01:00:02Z"}`, nil)
	a.put(hostinsight.HostsContainer, "timers/"+host+"/Orders.Timers.Broken/status", `{"Last":"yesterday"}`, nil)
	timers, problems, err := r.Timers(t.Context())
	if err != nil || len(timers) != 1 || timers[0].Function != "NightlySalesSummary" || !timers[0].Last.Equal(time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("Timers = %+v, %v", timers, err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Blob, "Orders.Timers.Broken") {
		t.Errorf("problems = %+v, want the broken status", problems)
	}

	// A singleton lock held by an invocation, and the host lock.
	a.put(hostinsight.HostsContainer, "locks/"+host+"/host", "", nil)
	a.put(hostinsight.HostsContainer, "locks/"+host+"/Orders.Functions.ProcessOrders.Listener", "", map[string]string{"FunctionInstance": "7f6c"})
	a.put(hostinsight.HostsContainer, "locks/"+host+"/idle", "", nil) // never leased
	for _, name := range []string{"locks/" + host + "/host", "locks/" + host + "/Orders.Functions.ProcessOrders.Listener"} {
		lc, err := lease.NewBlobClient(a.c.ServiceClient().NewContainerClient(hostinsight.HostsContainer).NewBlobClient(name), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(context.Background(), 60, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = lc.ReleaseLease(context.Background(), nil) })
	}
	locks, err := r.Locks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, l := range locks {
		if strings.Contains(l.Blob, host) {
			mine = append(mine, l.Kind+":"+l.State+":"+l.FunctionInstance)
		}
	}
	if strings.Join(mine, " ") != "host:leased: singleton:leased:7f6c" {
		t.Errorf("locks = %v", mine)
	}

	s := r.Snapshot(t.Context(), time.Now(), 10*time.Second)
	if s.Concurrency == nil || len(s.Timers) != 1 || len(s.Locks) < 2 {
		t.Errorf("snapshot = %+v", s)
	}
}

// A trip at off: checkpoints of the function's hub written after it are
// named; other hubs' are left out, and with no hub named none is judged.
func TestPositionsNameCheckpointsThatMovedWhileOff(t *testing.T) {
	off := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	snap := hostinsight.Snapshot{
		Checkpoints: []hostinsight.Checkpoint{
			{Namespace: "a", Hub: "orders", ConsumerGroup: "$default", Partition: "0", Moved: off.Add(-time.Minute), Sequence: 10, HasSequence: true},
			{Namespace: "a", Hub: "orders", ConsumerGroup: "$default", Partition: "1", Moved: off.Add(time.Minute), Sequence: 20, HasSequence: true},
			{Namespace: "a", Hub: "refunds", ConsumerGroup: "$default", Partition: "0", Moved: off.Add(time.Minute)},
		},
		Heads: map[string]hostinsight.Head{"a/orders/$default/0": {Last: 15}},
	}
	ps, own := hostinsight.Positions(snap, circuit.HubRef{Hub: "orders"}, off)
	if !own || len(ps) != 2 || ps[0].MovedWhileOff || !ps[1].MovedWhileOff {
		t.Fatalf("positions = %+v", ps)
	}
	if !ps[0].Counted || ps[0].Waiting != 5 || ps[1].Counted {
		t.Errorf("waiting: partition 0 %d (counted %v), partition 1 counted %v; want 5, true, false", ps[0].Waiting, ps[0].Counted, ps[1].Counted)
	}
	all, own := hostinsight.Positions(snap, circuit.HubRef{}, off)
	if own || len(all) != 3 || all[1].MovedWhileOff || all[2].MovedWhileOff {
		t.Errorf("with no hub named: own %v, positions %+v", own, all)
	}
}

// The sum covers the partitions Event Hubs answered for, and is said to be
// of the checkpointed ones: a partition never checkpointed resumes from
// the trigger's initial offset, so it is neither counted nor missing.
func TestWaitingCoversOnlyCheckpointedPartitions(t *testing.T) {
	ps := []hostinsight.Position{
		{Checkpoint: hostinsight.Checkpoint{Partition: "0", Sequence: 10, HasSequence: true}, Waiting: 5, Counted: true},
		{Checkpoint: hostinsight.Checkpoint{Partition: "1", Sequence: 20, HasSequence: true}, Waiting: 7, Counted: true},
		{Checkpoint: hostinsight.Checkpoint{Partition: "2", Sequence: 30, HasSequence: true}}, // the hub did not answer
		{Checkpoint: hostinsight.Checkpoint{Partition: "3"}},                                  // never checkpointed
	}
	if events, counted, of := hostinsight.Waiting(ps); events != 12 || counted != 2 || of != 3 {
		t.Errorf("Waiting = %d events on %d of %d partitions; want 12 on 2 of 3", events, counted, of)
	}
}

func TestBehindCountsTheEventsAfterTheCheckpoint(t *testing.T) {
	cp := func(seq int64) hostinsight.Checkpoint {
		return hostinsight.Checkpoint{Sequence: seq, HasSequence: true}
	}
	for _, tc := range []struct {
		name             string
		cp               hostinsight.Checkpoint
		head             hostinsight.Head
		waiting, expired int64
		ok               bool
	}{
		{"caught up", cp(999), hostinsight.Head{First: 0, Last: 999}, 0, 0, true},
		{"behind", cp(900), hostinsight.Head{First: 0, Last: 999}, 99, 0, true},
		// A checkpoint read before the hub's numbers (another hub recreated
		// under the same name) never counts as negative.
		{"ahead of the hub", cp(2000), hostinsight.Head{First: 0, Last: 999}, 0, 0, true},
		{"retention passed it", cp(99), hostinsight.Head{First: 500, Last: 999}, 500, 400, true},
		{"empty partition", cp(99), hostinsight.Head{First: 0, Last: 99, Empty: true}, 0, 0, true},
		{"never checkpointed", hostinsight.Checkpoint{}, hostinsight.Head{Last: 999}, 0, 0, false},
	} {
		w, e, ok := hostinsight.Behind(tc.cp, tc.head)
		if w != tc.waiting || e != tc.expired || ok != tc.ok {
			t.Errorf("%s: Behind = %d waiting, %d expired, %v; want %d, %d, %v", tc.name, w, e, ok, tc.waiting, tc.expired, tc.ok)
		}
	}
}
