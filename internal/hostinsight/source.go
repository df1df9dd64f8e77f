package hostinsight

// Source: apps' host snapshots read on demand and kept a short while, so
// pages and loops share one read.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"golang.org/x/sync/singleflight"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
)

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
	// Keep reads a hub's retention through ARM, for circuits that set
	// none; nil: only the circuit's setting counts.
	Keep func(ctx context.Context, subscription, namespace, hub string) (time.Duration, error)

	// flight joins callers that miss the cache at once (a list's Waiting
	// cells, one per open circuit of an app) to a single read.
	flight singleflight.Group

	oldest oldestCache

	mu    sync.Mutex
	cache map[string]cached
	held  map[string]time.Time // app|blob -> when first seen leased
}

type cached struct {
	key  string // what the snapshot was read with
	at   time.Time
	snap Snapshot
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

// Snapshot returns the app's host snapshot, and false when the app has no
// host storage configured.
func (s *Source) Snapshot(ctx context.Context, app circuit.App, now time.Time) (Snapshot, bool) {
	return s.SnapshotAfter(ctx, app, now, time.Time{})
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

// Client is the blob client of app's host storage, checked against the
// allowed endpoints as every read is: for the replay, which moves
// checkpoints with the same credential.
func (s *Source) Client(app circuit.App) (*azblob.Client, error) {
	if app.HostStorage == "" {
		return nil, errors.New("hostinsight: the app has no host storage")
	}
	r, err := s.reader(app.HostStorage, HostID(app.HostID, app.Site, app.Slot))
	if err != nil {
		return nil, err
	}
	return r.client, nil
}

// Checkpoints lists app's checkpoints alone, within the snapshot's
// time-out: the replay's history reads them every few seconds, and
// needs nothing else of the host.
func (s *Source) Checkpoints(ctx context.Context, app circuit.App) ([]Checkpoint, error) {
	if app.HostStorage == "" {
		return nil, nil
	}
	r, err := s.reader(app.HostStorage, HostID(app.HostID, app.Site, app.Slot))
	if err != nil {
		return nil, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cps, _, err := r.Checkpoints(ctx)
	return cps, err
}
