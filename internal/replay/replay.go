// Package replay resumes an Event Hubs function from before its first
// failure. The Event Hubs trigger checkpoints past a failed batch, so by
// the time a circuit opens the events of the failures before it are
// behind the checkpoint. This package keeps where each partition's
// checkpoint stood over time (History), finds at a trip the last
// position before the episode's first failure (PointOf), and, while the
// trigger is off, moves each checkpoint back there with a write
// conditional on what was read (Rewinder), refusing any partition the
// host is still using.
package replay

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/fusebox/fusebox/internal/hostinsight"
)

// Mark is where one partition's checkpoint stood: the blob's sequence
// number and offset, and when it last moved.
type Mark struct {
	Key         string `json:"k"` // namespace/hub/group/partition (hostinsight.Checkpoint.Key)
	Sequence    int64  `json:"s"`
	HasSequence bool   `json:"h,omitempty"`
	Offset      string `json:"o,omitempty"`
	Moved       int64  `json:"m,omitempty"` // unix seconds
	Legacy      bool   `json:"l,omitempty"`
}

// MarkOf is a checkpoint as History keeps it.
func MarkOf(c hostinsight.Checkpoint) Mark {
	m := Mark{Key: c.Key(), Sequence: c.Sequence, HasSequence: c.HasSequence, Offset: c.Offset, Legacy: c.Legacy}
	if !c.Moved.IsZero() {
		m.Moved = c.Moved.Unix()
	}
	return m
}

// Sample is every partition of one function's hub at one time.
type Sample struct {
	At    time.Time
	Marks []Mark
}

// MaxPartitions bounds one sample and one record: Event Hubs' premium
// and standard tiers have at most 100 partitions; a dedicated cluster's
// hub with more is refused with that reason rather than cut short.
const MaxPartitions = 128

// Mark is the sample's mark of key.
func (s Sample) Mark(key string) (Mark, bool) {
	for _, m := range s.Marks {
		if m.Key == key {
			return m, true
		}
	}
	return Mark{}, false
}

// Same says whether two samples hold the same positions: a sample that
// would repeat the last one need not be written.
func (s Sample) Same(o Sample) bool {
	if len(s.Marks) != len(o.Marks) {
		return false
	}
	for i := range s.Marks {
		if s.Marks[i] != o.Marks[i] {
			return false
		}
	}
	return true
}

// Slack is how much earlier than the first failure's reported second a
// sample must be to place it: a failure row holds whole seconds of the
// instance's clock, and the sample's time is Fusebox's. Earlier replays
// a few events twice; later would lose them.
const Slack = 5 * time.Second

// Partition is one partition's replay: from the checkpoint before the
// episode's first failure (From) to where it stood when the circuit
// opened (To).
type Partition struct {
	Key       string `json:"k"`
	Partition string `json:"p"`
	// Known is false when the history holds no position of this partition
	// before the first failure: it is left where it stopped, and named.
	Known bool `json:"known,omitempty"`
	From  Mark `json:"from"`
	// To is the checkpoint at the trip, as read after the trigger went off.
	To Mark `json:"to"`
	// Events lie after From up to To: the replay. Again are those of them
	// already handled before the first failure (the sampling's slack):
	// they run a second time. Expired are those retention dropped.
	Events  int64 `json:"n"`
	Again   int64 `json:"again,omitempty"`
	Expired int64 `json:"expired,omitempty"`
}

// Point is an episode's replay point: per partition, where to resume
// from so that no event of the failures before the trip is lost.
type Point struct {
	Episode      int64       `json:"episode"`
	FirstFailure time.Time   `json:"first"`
	SampledAt    time.Time   `json:"sampled"` // the sample From was read at
	Partitions   []Partition `json:"partitions"`
	// Problem says why no point could be placed (no history yet, too many
	// partitions...), for the page.
	Problem string `json:"problem,omitempty"`
}

// PointOf places the replay point: before is the last sample at or
// before the first failure less Slack, next the sample after it (zero:
// none; it estimates Again), now the checkpoints as they stand with the
// trigger off, heads what Event Hubs holds (by key; may miss some).
func PointOf(episode int64, first time.Time, before, next Sample, now []hostinsight.Checkpoint, heads map[string]hostinsight.Head) Point {
	p := Point{Episode: episode, FirstFailure: first, SampledAt: before.At}
	for _, c := range now {
		part := Partition{Key: c.Key(), Partition: c.Partition, To: MarkOf(c)}
		if m, ok := before.Mark(c.Key()); ok && m.HasSequence && c.HasSequence && m.Sequence <= c.Sequence {
			part.Known, part.From = true, m
			part.Events = c.Sequence - m.Sequence
			part.Again = min(again(m, first, before.At, next, c.Key()), part.Events)
			if h, ok := heads[c.Key()]; ok && !h.Empty && m.Sequence+1 < h.First {
				part.Expired = min(h.First-(m.Sequence+1), part.Events)
			}
		}
		p.Partitions = append(p.Partitions, part)
	}
	sort.Slice(p.Partitions, func(i, j int) bool { return lessKey(p.Partitions[i].Key, p.Partitions[j].Key) })
	return p
}

// again estimates the events handled between the sample before the
// first failure and the failure itself: where the checkpoint stood at the
// failure, read off the line between that sample and the next. The host
// checkpoints at an even pace until a burst, so the line is close; it
// cannot tell the events after the failure that succeeded apart from
// those that failed.
func again(from Mark, first, fromAt time.Time, next Sample, key string) int64 {
	n, ok := next.Mark(key)
	span := next.At.Sub(fromAt)
	if !ok || !n.HasSequence || n.Sequence <= from.Sequence || span <= 0 || first.Before(fromAt) {
		return 0
	}
	share := min(float64(first.Sub(fromAt))/float64(span), 1)
	return int64(float64(n.Sequence-from.Sequence) * share)
}

func lessKey(a, b string) bool {
	ka, pa := cutPartition(a)
	kb, pb := cutPartition(b)
	if ka != kb {
		return ka < kb
	}
	x, errX := strconv.Atoi(pa)
	y, errY := strconv.Atoi(pb)
	if errX == nil && errY == nil {
		return x < y
	}
	return pa < pb
}

func cutPartition(key string) (hub, partition string) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// Totals adds up a point: events replayed, of them run again, and lost
// for good (past retention, or on partitions with no history).
func (p Point) Totals() (replay, again, lost int64, unknown []string) {
	for _, part := range p.Partitions {
		if !part.Known {
			unknown = append(unknown, part.Partition)
			continue
		}
		replay += part.Events - part.Expired
		again += part.Again
		lost += part.Expired
	}
	return replay, again, lost, unknown
}

// Describe says a partition's replay in words: "sequence 1201 to 1580,
// 380 events".
func (part Partition) Describe() string {
	if !part.Known {
		return "no position before the first failure is known: left where it stopped"
	}
	s := fmt.Sprintf("sequence %d to %d, %d events", part.From.Sequence+1, part.To.Sequence, part.Events)
	if part.Events == 0 {
		s = "nothing to replay"
	}
	if part.Expired > 0 {
		s += fmt.Sprintf(", %d already past the hub's retention", part.Expired)
	}
	return s
}
