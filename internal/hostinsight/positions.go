package hostinsight

// The domain's reading of checkpoints: where a function's partitions
// stand and how many events wait behind them.

import (
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Position is where one partition of a function's hub stands.
type Position struct {
	Checkpoint
	// Waiting and Expired are Behind's, when Counted: the snapshot held
	// the partition's head.
	Waiting, Expired int64
	Counted          bool
	// MovedWhileOff: the checkpoint was written after the trigger was
	// switched off: the host finishing its last batches as it stopped
	// (within StopGrace), or something else consuming with the same
	// consumer group.
	MovedWhileOff bool
	// Oldest is when the first waiting event arrived (zero: not read);
	// retention drops it first.
	Oldest time.Time
}

// StopGrace is how long after its trigger is switched off a host may
// still checkpoint: it restarts to read the setting and finishes the
// batches it had in hand, each checkpointed (past a failure, too) as
// usual. A checkpoint written within it may be the host stopping; one
// written later is not.
const StopGrace = 30 * time.Second

// Late says p moved while off, and later than StopGrace after off.
func (p Position) Late(off time.Time) bool {
	return p.MovedWhileOff && p.Moved.After(off.Add(StopGrace))
}

// Expires is when the hub's retention begins to drop the events waiting
// behind p: its oldest waiting event's arrival plus retention. False when
// nothing waits, the oldest was not read, or the retention is unknown.
func (p Position) Expires(retention time.Duration) (time.Time, bool) {
	if !p.Counted || p.Waiting == 0 || p.Oldest.IsZero() || retention <= 0 {
		return time.Time{}, false
	}
	return p.Oldest.Add(retention), true
}

// FirstExpiry is the earliest Expires of ps, and its partition.
func FirstExpiry(ps []Position, retention time.Duration) (at time.Time, partition Position, ok bool) {
	for _, p := range ps {
		if e, has := p.Expires(retention); has && (!ok || e.Before(at)) {
			at, partition, ok = e, p, true
		}
	}
	return at, partition, ok
}

// Lost adds up the events retention dropped before they were read.
func Lost(ps []Position) int64 {
	var n int64
	for _, p := range ps {
		n += p.Expired
	}
	return n
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
