package hostinsight

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"
)

// Head is what Event Hubs says of one partition's newest event.
type Head struct {
	First, Last int64 // first retained and last enqueued sequence numbers
	Empty       bool
	Enqueued    time.Time // when the last event arrived
}

// Behind says how far a checkpoint is behind its partition's head:
// waiting is the events after the checkpoint still in the hub (the last
// enqueued sequence number less the checkpoint's, never negative), and
// expired those that retention dropped before the function read them.
// ok is false when the checkpoint has no sequence number: where such a
// partition starts depends on the trigger's initial offset setting.
func Behind(c Checkpoint, h Head) (waiting, expired int64, ok bool) {
	if !c.HasSequence {
		return 0, 0, false
	}
	if h.Empty {
		return 0, 0, true
	}
	next := c.Sequence + 1
	if next < h.First {
		expired, next = h.First-next, h.First
	}
	return max(h.Last-next+1, 0), expired, true
}

// HeadReader reads partitions' heads from Event Hubs.
type HeadReader interface {
	// Heads reads the given partitions of hub, in namespace, through
	// conn. It returns ErrOtherHub when conn does not lead there, and
	// the heads it read beside an error for those it could not.
	Heads(ctx context.Context, conn, namespace, hub string, partitions []string) (map[string]Head, error)
	// Oldest reads when the first event after sequence number after
	// arrived on a partition.
	Oldest(ctx context.Context, conn, namespace, hub, partition string, after int64) (time.Time, error)
}

// ErrOtherHub is a connection for another namespace or event hub.
var ErrOtherHub = errors.New("hostinsight: the Event Hubs connection is for another namespace or hub")

// readHeads reads the heads of every checkpointed partition, one hub at a
// time side by side, and files them under Checkpoint.Key.
func readHeads(ctx context.Context, hr HeadReader, conn string, cps []Checkpoint) (map[string]Head, []Problem) {
	type hubKey struct{ ns, hub string }
	parts := map[hubKey][]string{}
	for _, c := range cps {
		k := hubKey{c.Namespace, c.Hub}
		if !slices.Contains(parts[k], c.Partition) {
			parts[k] = append(parts[k], c.Partition)
		}
	}
	heads := map[string]Head{}
	var problems []Problem
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k, ps := range parts {
		wg.Go(func() {
			got, err := hr.Heads(ctx, conn, k.ns, k.hub, ps)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !errors.Is(err, ErrOtherHub) {
				problems = append(problems, Problem{Blob: "event hub " + k.ns + "/" + k.hub, Reason: err.Error()})
			}
			for _, c := range cps {
				if c.Namespace == k.ns && c.Hub == k.hub {
					if h, ok := got[c.Partition]; ok {
						heads[c.Key()] = h
					}
				}
			}
		})
	}
	wg.Wait()
	sort.Slice(problems, func(i, j int) bool { return problems[i].Blob < problems[j].Blob })
	return heads, problems
}
