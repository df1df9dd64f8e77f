// Package hostinsight reads what the Azure Functions host keeps in a
// function app's own storage account (AzureWebJobsStorage): Event Hubs
// checkpoints and partition ownership, the learned-concurrency snapshot,
// timer status and the host's blob-lease locks. It only reads.
//
// Everything in those containers was written by another program: every
// blob is bad input until it parses. A blob that is missing, unreadable or
// malformed is reported as such, with its name and the reason, beside the
// ones that read; nothing here fails a whole snapshot because of one blob,
// and every call is bounded by the caller's context (Snapshot adds its own
// time-out), so a slow account never holds up circuit control, which never
// calls this package.
package hostinsight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"golang.org/x/sync/singleflight"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
)

// Containers the host writes.
const (
	EventHubContainer = "azure-webjobs-eventhub"
	HostsContainer    = "azure-webjobs-hosts"
)

// HostID derives the host id as the Functions host does when the app sets
// none: AzureFunctionsWebHost__hostid if set, else the site name lower-
// cased (with "-<slot>" for a non-production slot), cut to 32 characters,
// trailing '-' removed.
func HostID(setting, site, slot string) string {
	if setting != "" {
		return setting
	}
	id := strings.ToLower(site)
	if slot != "" && !strings.EqualFold(slot, "production") {
		id += "-" + strings.ToLower(slot)
	}
	if len(id) > 32 {
		id = id[:32]
	}
	return strings.TrimRight(id, "-")
}

// Reader reads one app's host storage.
type Reader struct {
	client *azblob.Client
	hostID string
}

// NewReader reads through client, for the host with hostID.
func NewReader(client *azblob.Client, hostID string) *Reader {
	return &Reader{client: client, hostID: hostID}
}

// blobClient is the client a host-storage setting names: an account URL
// read with cred, or a connection string, through transport (nil: the
// SDK's own). Nothing is sent yet.
func blobClient(setting string, cred azcore.TokenCredential, transport policy.Transporter) (*azblob.Client, error) {
	if !isAccountURL(setting) {
		c, err := azblob.NewClientFromConnectionString(setting, clientOptions(transport))
		if err != nil {
			return nil, errors.New("must be the app's AzureWebJobsStorage connection string or its blob account URL (https://<account>.blob.core.windows.net)")
		}
		return c, nil
	}
	if cred == nil {
		return nil, errors.New("an account URL needs a managed identity, and this Fusebox has no Azure credential")
	}
	c, err := azblob.NewClient(setting, cred, clientOptions(transport))
	if err != nil {
		return nil, errors.New("the account URL does not make a client")
	}
	return c, nil
}

func isAccountURL(setting string) bool {
	return strings.HasPrefix(setting, "https://") || strings.HasPrefix(setting, "http://")
}

func clientOptions(transport policy.Transporter) *azblob.ClientOptions {
	o := &azblob.ClientOptions{}
	if transport != nil {
		o.Transport = transport
	}
	// The page's own deadline bounds a read; retries inside it would only
	// hide an account that does not answer.
	o.Retry.MaxRetries = -1
	return o
}

// Problem is a blob that could not be read or understood.
type Problem struct {
	Blob   string // container/name
	Reason string
}

// Checkpoint is one partition's position for one consumer group.
type Checkpoint struct {
	Namespace, Hub, ConsumerGroup, Partition string
	// Sequence is the last checkpointed sequence number; HasSequence is
	// false when the blob carries none (a partition never checkpointed).
	Sequence    int64
	HasSequence bool
	Offset      string    // may be empty (the v5 extension can leave it out)
	Moved       time.Time // the checkpoint blob's last write: when it last moved
	Owner       string    // the instance that owns the partition, if known
	Legacy      bool      // the v4 layout: one JSON blob per partition
}

// Key names a checkpoint's partition: namespace/hub/group/partition.
func (c Checkpoint) Key() string {
	return c.Namespace + "/" + c.Hub + "/" + c.ConsumerGroup + "/" + c.Partition
}

type blob struct {
	name     string
	metadata map[string]string // keys lower-cased
	modified time.Time
	lease    string // leased, available, expired, breaking, broken
	duration string // infinite or fixed
}

func (r *Reader) list(ctx context.Context, containerName, prefix string) ([]blob, error) {
	var out []blob
	p := r.client.NewListBlobsFlatPager(containerName, &container.ListBlobsFlatOptions{Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true}})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if bloberror.HasCode(err, bloberror.ContainerNotFound) {
				return nil, nil // the host never wrote one: nothing to show
			}
			return out, describe(containerName, err)
		}
		if page.Segment == nil {
			continue
		}
		for _, it := range page.Segment.BlobItems {
			if it == nil || it.Name == nil {
				continue
			}
			b := blob{name: *it.Name, metadata: map[string]string{}}
			for k, v := range it.Metadata {
				if v != nil {
					b.metadata[strings.ToLower(k)] = *v
				}
			}
			if pr := it.Properties; pr != nil {
				if pr.LastModified != nil {
					b.modified = *pr.LastModified
				}
				if pr.LeaseState != nil {
					b.lease = string(*pr.LeaseState)
				}
				if pr.LeaseDuration != nil {
					b.duration = string(*pr.LeaseDuration)
				}
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// maxBlob bounds what is read of one blob: the host's status blobs are a
// few hundred bytes, a snapshot a few kilobytes.
const maxBlob = 256 << 10

func (r *Reader) read(ctx context.Context, containerName, name string) ([]byte, error) {
	resp, err := r.client.DownloadStream(ctx, containerName, name, nil)
	if err != nil {
		return nil, describe(containerName+"/"+name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBlob+1))
	if err != nil {
		return nil, describe(containerName+"/"+name, err)
	}
	if len(data) > maxBlob {
		return nil, fmt.Errorf("hostinsight: %s/%s is larger than %d KiB", containerName, name, maxBlob>>10)
	}
	return data, nil
}

// ErrNotFound is a blob the host has not written.
var ErrNotFound = errors.New("hostinsight: not written by the host (yet)")

// describe words a failed read for pages and logs: what was read and the
// class of failure, never the SDK's text, which carries the server's
// answer and, for a SAS connection string, the signed URL. The cause stays
// reachable through errors.Is and errors.As.
func describe(what string, err error) error {
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	msg := "hostinsight: " + what + ": " + egress.Class(err)
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == 403 {
		msg += ": give Fusebox's host-insight identity Storage Blob Data Reader on the app's storage account"
	}
	return &ReadError{msg: msg, err: err}
}

// ReadError is a failed read whose text is safe to show.
type ReadError struct {
	msg string
	err error
}

func (e *ReadError) Error() string { return e.msg }
func (e *ReadError) Unwrap() error { return e.err }

// Checkpoints lists every partition's checkpoint in both layouts, with its
// owner.
func (r *Reader) Checkpoints(ctx context.Context) ([]Checkpoint, []Problem, error) {
	blobs, err := r.list(ctx, EventHubContainer, "")
	if err != nil {
		return nil, nil, err
	}
	owners := map[string]string{}
	var cps []Checkpoint
	var problems []Problem
	for _, b := range blobs {
		parts := strings.Split(b.name, "/")
		switch {
		case len(parts) == 5 && parts[3] == "ownership":
			owners[strings.Join(append(parts[:3:3], parts[4]), "/")] = b.metadata["ownerid"]
		case len(parts) == 5 && parts[3] == "checkpoint":
			cp := Checkpoint{Namespace: parts[0], Hub: parts[1], ConsumerGroup: parts[2], Partition: parts[4], Moved: b.modified, Offset: b.metadata["offset"]}
			if s, ok := b.metadata["sequencenumber"]; ok && s != "" {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil || n < -1 {
					problems = append(problems, Problem{EventHubContainer + "/" + b.name, fmt.Sprintf("sequencenumber %q is not a sequence number", s)})
					continue
				}
				cp.Sequence, cp.HasSequence = n, true
			}
			cps = append(cps, cp)
		case len(parts) == 4:
			cp, err := r.legacy(ctx, b, parts)
			if err != nil {
				problems = append(problems, Problem{EventHubContainer + "/" + b.name, err.Error()})
				continue
			}
			cps = append(cps, cp)
		}
	}
	for i := range cps {
		if o, ok := owners[cps[i].Key()]; ok && cps[i].Owner == "" {
			cps[i].Owner = o
		}
	}
	sort.Slice(cps, func(i, j int) bool { return lessPartition(cps[i], cps[j]) })
	return cps, problems, nil
}

// lessPartition orders by hub and group, then partitions numerically.
func lessPartition(a, b Checkpoint) bool {
	if a.Namespace+a.Hub+a.ConsumerGroup != b.Namespace+b.Hub+b.ConsumerGroup {
		return a.Namespace+"/"+a.Hub+"/"+a.ConsumerGroup < b.Namespace+"/"+b.Hub+"/"+b.ConsumerGroup
	}
	x, errX := strconv.Atoi(a.Partition)
	y, errY := strconv.Atoi(b.Partition)
	if errX == nil && errY == nil {
		return x < y
	}
	return a.Partition < b.Partition
}

// legacy reads a v4 checkpoint: a JSON body per partition.
func (r *Reader) legacy(ctx context.Context, b blob, parts []string) (Checkpoint, error) {
	data, err := r.read(ctx, EventHubContainer, b.name)
	if err != nil {
		return Checkpoint{}, err
	}
	var body struct {
		PartitionID    string `json:"PartitionId"`
		Owner          string
		Offset         *string
		SequenceNumber *int64
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return Checkpoint{}, fmt.Errorf("not a checkpoint in the legacy layout (JSON with PartitionId, Owner, Offset, SequenceNumber): %v", err)
	}
	cp := Checkpoint{Namespace: parts[0], Hub: parts[1], ConsumerGroup: parts[2], Partition: parts[3], Moved: b.modified, Owner: body.Owner, Legacy: true}
	if body.PartitionID != "" && body.PartitionID != parts[3] {
		return Checkpoint{}, fmt.Errorf("PartitionId %q differs from the blob's name", body.PartitionID)
	}
	if body.Offset != nil {
		cp.Offset = *body.Offset
	}
	if body.SequenceNumber != nil {
		if *body.SequenceNumber < -1 {
			return Checkpoint{}, fmt.Errorf("SequenceNumber %d is not a sequence number", *body.SequenceNumber)
		}
		cp.Sequence, cp.HasSequence = *body.SequenceNumber, true
	}
	return cp, nil
}

// Concurrency is the host's learned-concurrency snapshot.
type Concurrency struct {
	Timestamp time.Time
	Cores     int
	Functions map[string]int // function name -> learned concurrency
}

// Concurrency reads concurrency/{hostId}/concurrencyStatus.json.
func (r *Reader) Concurrency(ctx context.Context) (Concurrency, error) {
	name := "concurrency/" + r.hostID + "/concurrencyStatus.json"
	data, err := r.read(ctx, HostsContainer, name)
	if err != nil {
		return Concurrency{}, err
	}
	if len(data) == 0 {
		return Concurrency{}, fmt.Errorf("hostinsight: %s/%s is empty", HostsContainer, name)
	}
	var body struct {
		Timestamp         time.Time
		NumberOfCores     int
		FunctionSnapshots map[string]struct{ Concurrency int }
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return Concurrency{}, fmt.Errorf("hostinsight: %s/%s is not a concurrency snapshot: %v", HostsContainer, name, err)
	}
	c := Concurrency{Timestamp: body.Timestamp, Cores: body.NumberOfCores, Functions: map[string]int{}}
	for fn, s := range body.FunctionSnapshots {
		// In-process names are Namespace.Class.Method; the function's
		// name is the last part.
		c.Functions[lastDot(fn)] = s.Concurrency
	}
	return c, nil
}

func lastDot(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Timer is one timer trigger's schedule status.
type Timer struct {
	Name                    string // as the host names it
	Function                string // the last part of Name
	Last, Next, LastUpdated time.Time
}

// Timers reads timers/{hostId}/{timer}/status.
func (r *Reader) Timers(ctx context.Context) ([]Timer, []Problem, error) {
	prefix := "timers/" + r.hostID + "/"
	blobs, err := r.list(ctx, HostsContainer, prefix)
	if err != nil {
		return nil, nil, err
	}
	var out []Timer
	var problems []Problem
	for _, b := range blobs {
		rest := strings.TrimPrefix(b.name, prefix)
		name, ok := strings.CutSuffix(rest, "/status")
		if !ok || name == "" {
			continue
		}
		data, err := r.read(ctx, HostsContainer, b.name)
		if err != nil {
			problems = append(problems, Problem{HostsContainer + "/" + b.name, err.Error()})
			continue
		}
		var st struct{ Last, Next, LastUpdated time.Time }
		if err := json.Unmarshal(data, &st); err != nil {
			problems = append(problems, Problem{HostsContainer + "/" + b.name, "not a timer status (JSON with Last, Next, LastUpdated): " + err.Error()})
			continue
		}
		out = append(out, Timer{Name: name, Function: lastDot(name), Last: st.Last, Next: st.Next, LastUpdated: st.LastUpdated})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, problems, nil
}

// Lock is a leased blob in the hosts container: the host lock, listener
// and [Singleton] locks, and code-level per-key locks.
type Lock struct {
	Blob     string // name in azure-webjobs-hosts
	Kind     string // host, singleton, other
	State    string // leased, expired, broken, breaking
	Duration string // infinite or fixed
	Since    time.Time
	// FunctionInstance is the host's metadata on singleton locks: which
	// invocation holds it.
	FunctionInstance string
	// HeldSince is when Fusebox first saw it leased (blob leases do not
	// say when they were taken); zero from a Reader alone.
	HeldSince time.Time
}

// Breakable reports whether an operator may break the lock at now: not
// the host lock, which a running host renews, and only once it has been
// seen held for at least after.
func (l Lock) Breakable(now time.Time, after time.Duration) bool {
	return l.Kind != "host" && l.State == "leased" && !l.HeldSince.IsZero() && now.Sub(l.HeldSince) >= after
}

// Break breaks the lease on a blob in azure-webjobs-hosts at once.
func (r *Reader) Break(ctx context.Context, name string) error {
	bc := r.client.ServiceClient().NewContainerClient(HostsContainer).NewBlobClient(name)
	lc, err := lease.NewBlobClient(bc, nil)
	if err != nil {
		return fmt.Errorf("hostinsight: %w", err)
	}
	zero := int32(0)
	if _, err := lc.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: &zero}); err != nil {
		return describe(HostsContainer+"/"+name, err)
	}
	return nil
}

// Locks lists blobs in azure-webjobs-hosts that are, or were, leased.
func (r *Reader) Locks(ctx context.Context) ([]Lock, error) {
	blobs, err := r.list(ctx, HostsContainer, "")
	if err != nil {
		return nil, err
	}
	var out []Lock
	for _, b := range blobs {
		if b.lease == "" || b.lease == "available" {
			continue
		}
		kind := "other"
		switch {
		case strings.HasPrefix(b.name, "locks/"+r.hostID+"/host"):
			kind = "host"
		case strings.HasPrefix(b.name, "locks/"):
			kind = "singleton"
		}
		out = append(out, Lock{Blob: b.name, Kind: kind, State: b.lease, Duration: b.duration, Since: b.modified, FunctionInstance: b.metadata["functioninstance"]})
	}
	// The host lock first, then by name.
	sort.Slice(out, func(i, j int) bool {
		if (out[i].Kind == "host") != (out[j].Kind == "host") {
			return out[i].Kind == "host"
		}
		return out[i].Blob < out[j].Blob
	})
	return out, nil
}

// Snapshot is everything at once, each part on its own: a part that fails
// is reported in Problems, the others are there.
type Snapshot struct {
	ReadAt      time.Time
	Checkpoints []Checkpoint
	Concurrency *Concurrency
	Timers      []Timer
	Locks       []Lock
	// Heads are the partitions' heads by Checkpoint.Key, read from Event
	// Hubs when the app names a connection to it.
	Heads    map[string]Head
	Problems []Problem
}

// Snapshot reads every part within timeout.
func (r *Reader) Snapshot(ctx context.Context, now time.Time, timeout time.Duration) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := Snapshot{ReadAt: now}
	add := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrNotFound) {
			s.Problems = append(s.Problems, Problem{what, err.Error()})
		}
	}
	cps, probs, err := r.Checkpoints(ctx)
	s.Checkpoints, s.Problems = cps, append(s.Problems, probs...)
	add(EventHubContainer, err)
	if c, err := r.Concurrency(ctx); err == nil {
		s.Concurrency = &c
	} else {
		add(HostsContainer+"/concurrency/"+r.hostID+"/concurrencyStatus.json", err)
	}
	timers, probs, err := r.Timers(ctx)
	s.Timers, s.Problems = timers, append(s.Problems, probs...)
	add(HostsContainer+"/timers", err)
	locks, err := r.Locks(ctx)
	s.Locks = locks
	add(HostsContainer, err)
	return s
}

// Position is where one partition of a function's hub stands.
type Position struct {
	Checkpoint
	// Waiting and Expired are Behind's, when Counted: the snapshot held
	// the partition's head.
	Waiting, Expired int64
	Counted          bool
	// MovedWhileOff: the checkpoint was written after the trigger was
	// switched off. It should not have been: something else consumes with
	// the same consumer group, or the host had not stopped yet.
	MovedWhileOff bool
}

// Positions are the checkpoints of the hub ref names, each with what waits
// behind it and whether it moved after off (zero: the trigger is on). When
// ref names no hub, every checkpoint is returned, own is false, and none
// is judged against off: they may be other functions'.
func Positions(snap Snapshot, ref circuit.HubRef, off time.Time) (ps []Position, own bool) {
	own = ref.Hub != ""
	if !own {
		off = time.Time{}
	}
	for _, c := range snap.Checkpoints {
		if own && !ref.Matches(c.Namespace, c.Hub, c.ConsumerGroup) {
			continue
		}
		p := Position{Checkpoint: c, MovedWhileOff: !off.IsZero() && c.Moved.After(off)}
		if h, ok := snap.Heads[c.Key()]; ok {
			p.Waiting, p.Expired, p.Counted = Behind(c, h)
		}
		ps = append(ps, p)
	}
	return ps, own
}

// Waiting adds up the events waiting behind ps, and says how many of the
// checkpointed partitions (those with a sequence number) the sum covers:
// Event Hubs may not have answered for every one.
func Waiting(ps []Position) (events int64, counted, checkpointed int) {
	for _, p := range ps {
		if p.HasSequence {
			checkpointed++
		}
		if p.Counted {
			events += p.Waiting
			counted++
		}
	}
	return events, counted, checkpointed
}

// Source reads apps' host storage on demand, keeping each app's snapshot
// for TTL so pages that refresh do not each read the account.
type Source struct {
	TTL     time.Duration // default 15s
	Timeout time.Duration // of one snapshot; default 5s
	// Credential reads accounts given as https URLs (a managed identity);
	// nil allows connection strings only. Give it egress.Scope'd to
	// Storage: a server's challenge then cannot obtain another token.
	Credential azcore.TokenCredential
	// Endpoints are the accounts that may be read; an app whose host
	// storage lies elsewhere is refused before anything is sent.
	Endpoints egress.Endpoints
	// Transport carries every read (egress.Policy's, so that no read
	// reaches a private or metadata address); nil: the SDK's own.
	Transport policy.Transporter
	// Hubs reads partitions' heads for apps with an Event Hubs
	// connection; nil: no lag is shown.
	Hubs HeadReader

	// flight joins callers that miss the cache at once (a list's Waiting
	// cells, one per open circuit of an app) to a single read.
	flight singleflight.Group

	mu    sync.Mutex
	cache map[string]cached
	held  map[string]time.Time // app|blob -> when first seen leased
}

type cached struct {
	key  string // what the snapshot was read with
	at   time.Time
	snap Snapshot
}

// Snapshot returns the app's host snapshot, and false when the app has no
// host storage configured.
func (s *Source) Snapshot(ctx context.Context, app circuit.App, now time.Time) (Snapshot, bool) {
	return s.SnapshotAfter(ctx, app, now, time.Time{})
}

// SnapshotAfter is Snapshot read no earlier than after: a page about a
// trigger switched at after must not show what the host did before it.
func (s *Source) SnapshotAfter(ctx context.Context, app circuit.App, now, after time.Time) (Snapshot, bool) {
	if app.HostStorage == "" {
		return Snapshot{}, false
	}
	ttl, timeout := s.TTL, s.Timeout
	if ttl <= 0 {
		ttl = 15 * time.Second
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	hostID := HostID(app.HostID, app.Site, app.Slot)
	key := app.HostStorage + "|" + hostID + "|" + app.EventHubs
	if snap, ok := s.cached(app.ID, key, now, ttl, after); ok {
		return snap, true
	}
	// The read is shared, so no one caller's cancellation may cut it short;
	// the timeout bounds it. It looks at the cache again, which a read that
	// ended since the look above has filled. A read that began before after
	// is no answer for this caller: it reads again.
	v, _, _ := s.flight.Do(app.ID+"|"+key, func() (any, error) {
		if snap, ok := s.cached(app.ID, key, now, ttl, after); ok {
			return snap, nil
		}
		return s.read(context.WithoutCancel(ctx), app, key, hostID, now, timeout), nil
	})
	snap := v.(Snapshot)
	if snap.ReadAt.Before(after) {
		snap = s.read(ctx, app, key, hostID, now, timeout)
	}
	return snap, true
}

// cached is the app's kept snapshot, if it was read with key, less than
// ttl before now, and not before after.
func (s *Source) cached(appID, key string, now time.Time, ttl time.Duration, after time.Time) (Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[appID]
	if !ok || c.key != key || now.Sub(c.at) >= ttl || c.at.Before(after) {
		return Snapshot{}, false
	}
	return c.snap, true
}

// read reads the app's snapshot afresh, notes how long each lock has been
// seen held, and keeps the snapshot for the next callers.
func (s *Source) read(ctx context.Context, app circuit.App, key, hostID string, now time.Time, timeout time.Duration) Snapshot {
	// One deadline for the blobs and the hub together: a page waits for
	// the slower of them at most timeout.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := s.reader(app.HostStorage, hostID)
	var snap Snapshot
	if err != nil {
		snap = Snapshot{ReadAt: now, Problems: []Problem{{Blob: "(connection)", Reason: err.Error()}}}
	} else {
		snap = r.Snapshot(ctx, now, timeout)
	}
	if app.EventHubs != "" && s.Hubs != nil && len(snap.Checkpoints) > 0 {
		heads, problems := readHeads(ctx, s.Hubs, app.EventHubs, snap.Checkpoints)
		snap.Heads, snap.Problems = heads, append(snap.Problems, problems...)
	}
	s.mu.Lock()
	if s.cache == nil {
		s.cache, s.held = map[string]cached{}, map[string]time.Time{}
	}
	seen := map[string]bool{}
	for i, l := range snap.Locks {
		k := app.ID + "|" + l.Blob
		seen[k] = true
		if l.State != "leased" {
			delete(s.held, k)
			continue
		}
		if _, ok := s.held[k]; !ok {
			s.held[k] = now
		}
		snap.Locks[i].HeldSince = s.held[k]
	}
	for k := range s.held {
		if strings.HasPrefix(k, app.ID+"|") && !seen[k] {
			delete(s.held, k)
		}
	}
	s.cache[app.ID] = cached{key: key, at: now, snap: snap}
	s.mu.Unlock()
	return snap
}

// Break breaks a lock of the app's host, and forgets the cached snapshot.
func (s *Source) Break(ctx context.Context, app circuit.App, blob string) error {
	if app.HostStorage == "" {
		return errors.New("hostinsight: the app has no host storage")
	}
	r, err := s.reader(app.HostStorage, HostID(app.HostID, app.Site, app.Slot))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.Break(ctx, blob); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.cache, app.ID)
	delete(s.held, app.ID+"|"+blob)
	s.mu.Unlock()
	return nil
}

func (s *Source) reader(conn, hostID string) (*Reader, error) {
	c, err := blobClient(conn, s.Credential, s.Transport)
	if err != nil {
		return nil, fmt.Errorf("hostinsight: %w", err)
	}
	// Checked on every read, not only when saved (a row written before the
	// rule, or by hand, is bad input too), and on the endpoint the client
	// will call, as azblob read the setting.
	if err := s.Endpoints.CheckBlobURL(c.URL()); err != nil {
		return nil, fmt.Errorf("hostinsight: %w", err)
	}
	return NewReader(c, hostID), nil
}

// CheckHostStorage says what is wrong with a host-storage setting, or nil:
// a connection string that parses, or a blob account URL, either of an
// endpoint eps allows.
func CheckHostStorage(eps egress.Endpoints, setting string) error {
	if setting == "" {
		return nil
	}
	endpoint := setting
	if !isAccountURL(setting) {
		c, err := blobClient(setting, nil, nil)
		if err != nil {
			return err
		}
		endpoint = c.URL()
	}
	var refused *egress.EndpointError
	if err := eps.CheckBlobURL(endpoint); errors.As(err, &refused) {
		return errors.New(refused.Reason + "; Fusebox reads only Azure Storage endpoints over https")
	}
	return nil
}

// TimerOf finds a function's timer in a snapshot.
func TimerOf(s Snapshot, function string) (Timer, bool) {
	for _, t := range s.Timers {
		if t.Function == function {
			return t, true
		}
	}
	return Timer{}, false
}

// LastFired is when the host says function's timer last fired in app's
// storage; zero when unknown.
func (s *Source) LastFired(ctx context.Context, app circuit.App, function string, now time.Time) time.Time {
	snap, ok := s.Snapshot(ctx, app, now)
	if !ok {
		return time.Time{}
	}
	t, _ := TimerOf(snap, function)
	return t.Last
}
