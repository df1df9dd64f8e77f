package hostinsight

// Event Hubs checkpoints, in the extension's two blob layouts.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

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
