package amqphub

import (
	"context"
	"sort"
	"strconv"
)

// Fixed is a namespace whose partitions never change: hub name, then
// partition id, to what Event Hubs says of it.
type Fixed map[string]map[string]Partition

// Partitions lists a hub's partition ids, in numeric order.
func (f Fixed) Partitions(hub string) ([]string, bool) {
	parts, ok := f[hub]
	if !ok {
		return nil, false
	}
	ids := make([]string, 0, len(parts))
	for id := range parts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, errA := strconv.Atoi(ids[i])
		b, errB := strconv.Atoi(ids[j])
		if errA == nil && errB == nil {
			return a < b
		}
		return ids[i] < ids[j]
	})
	return ids, true
}

// Partition describes one partition.
func (f Fixed) Partition(_ context.Context, hub, id string) (Partition, bool) {
	p, ok := f[hub][id]
	return p, ok
}
