package storage

import (
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// circuitState is what a transition writes of a circuit's row, merged:
// the breaker's state (setState's columns),
// so a transition decided on a circuit as read is one conditional write,
// with no read of the row again. A zero time clears its column.
type circuitState struct {
	tablestore.Meta
	State         string
	Episode       int64
	Streak        int32
	ChangedAt     time.Time
	Reason        string
	Held          bool
	ThrottleStage int32
	ThrottleSince int64
	Ramping       bool
	Asked         bool
	Released      string
	RecentChanges string
	PauseUntil    time.Time
	Downstream    string
}

func (*circuitState) ClearsTimes() {}

// fencedState is circuitState written under a lease: it takes the row's
// fence over.
type fencedState struct {
	circuitState
	FenceLease      string
	FenceGeneration int64
}

func (*fencedState) ClearsTimes() {}

// stateOf is ci's state as a merge at ci.Version; under a lease, the
// fence too.
func stateOf(ci circuit.Circuit, f fenceOf) tablestore.Entity {
	var row circuitRow
	row.setState(ci)
	s := circuitState{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: circuitKey(ci.Function), ETag: tablestore.ETag(ci.Version)},
		State: row.State, Episode: row.Episode, Streak: row.Streak, ChangedAt: row.ChangedAt, Reason: row.Reason, Held: row.Held,
		ThrottleStage: row.ThrottleStage, ThrottleSince: row.ThrottleSince, Ramping: row.Ramping, Asked: row.Asked, Released: row.Released,
		RecentChanges: row.RecentChanges, PauseUntil: row.PauseUntil, Downstream: row.Downstream}
	if f.lease == "" {
		return &s
	}
	return &fencedState{circuitState: s, FenceLease: f.lease, FenceGeneration: f.generation}
}

// fenceOf is the fence a row holds.
type fenceOf struct {
	lease      string
	generation int64
}

// readFences remembers the fence each circuit row held at the versions
// this instance read: an ETag names one content of a row, so the fence
// at a version never changes, and a transition at a version read here
// checks its fence without reading the row again. At most maxReadFences,
// then it starts over.
type readFences struct {
	mu sync.Mutex
	at map[string]fenceOf // app/row key/ETag -> fence
}

const maxReadFences = 20_000

func (r *readFences) keep(pk, rk string, etag tablestore.ETag, lease string, generation int64) {
	if etag == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil || len(r.at) >= maxReadFences {
		r.at = map[string]fenceOf{}
	}
	r.at[pk+"/"+rk+"/"+string(etag)] = fenceOf{lease, generation}
}

func (r *readFences) of(appID, rowKey, version string) (fenceOf, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.at[appID+"/"+rowKey+"/"+version]
	return f, ok
}
