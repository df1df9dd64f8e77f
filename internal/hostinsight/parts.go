package hostinsight

// The other parts the host keeps: learned concurrency, timer status and
// the leased blobs of azure-webjobs-hosts.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

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
