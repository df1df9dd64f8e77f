package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Circuits keeps, per app partition, one row per circuit (RowKey
// "c|<function>") and its flip log beside it ("f|<function>|<inverted
// episode>"), so a transition and its log entry commit in one batch.
//
// Listing reads only what changed (see incremental): listing 1,000
// circuits in full costs tens of milliseconds of JSON decoding on every
// dashboard refresh and evaluator tick; the incremental read costs what
// changed.
type Circuits struct {
	table  *tablestore.Table
	faults *Faults

	mu    sync.Mutex
	cache map[string]circuitRow // by app/function
	inc   incremental
	// sorted is cache as circuits, in List's order; nil when a row changed
	// since. At 10,000 circuits, converting and sorting every row on every
	// page and tick cost more than the read that found nothing changed.
	sorted []circuit.Circuit
	// converted is each cached circuit as converted last, with the
	// versions of the rows it was converted from: a change of one row
	// decodes one circuit's settings again, not every one's.
	converted map[string]convertedCircuit

	// What Recent serves: the last list and when its read began. writes
	// counts this instance's writes, so a list read before one is never
	// served after it.
	last    atomic.Pointer[listed]
	writes  atomic.Uint64
	listing atomic.Int32 // Lists under way or waiting

	// fences are the rows' fences at the versions read here, so a write
	// at a version read here needs no read to check its fence.
	fences readFences
	// watched counts the reads of one circuit's row (Get and the reads
	// of a read-and-replace), for the tests of what a trip costs; other
	// circuits' reads (a job's catch-up check, a page) are not its.
	watched atomic.Pointer[watchedRow]
}

type watchedRow struct {
	appID, function string
	reads           atomic.Int64
}

type convertedCircuit struct {
	row, actuation tablestore.ETag
	ci             circuit.Circuit
}

type listed struct {
	circuits []circuit.Circuit // shared: never changed once stored
	began    time.Time
	writes   uint64 // c.writes as the read began
}

// ErrNoCircuit is a circuit that does not exist; it wraps circuit.ErrNotFound.
var ErrNoCircuit = circuit.ErrNoCircuit

const (
	circuitPrefix = "c|"
	flipPrefix    = "f|"
)

// circuitsAndActuations are the rows List reads, in one query: every
// circuit's ("c|") and its actuation's ("a|"); nothing else sorts between.
var circuitsAndActuations = tablestore.And(tablestore.Ge("RowKey", actuationPrefix), tablestore.Lt("RowKey", circuitPrefix[:1]+"}"))

func circuitKey(function string) string { return circuitPrefix + function }

func flipKey(function string, episode int64) string {
	return fmt.Sprintf("%s%s|%019d", flipPrefix, function, math.MaxInt64-episode)
}

type circuitRow struct {
	tablestore.Meta        // PartitionKey: app id; RowKey: "c|" + function
	Function        string // as given, for readers that do not parse keys
	// Settings is what people set, as JSON (circuit.Spec), bounded by
	// maxSettingsJSON: written by Create, Put and UpdateSettings only,
	// never by the writers of state.
	Settings       string
	columnSettings        // read only: how rows written before schema version 12 kept them
	State          string // closed, open, half-open, forced-open
	Episode        int64
	Streak         int32 // the evaluator's consecutive trips
	ChangedAt      time.Time
	Reason         string
	Held           bool      // the last change was a trip the app's guardrail held
	ThrottleStage  int32     // while throttled: the ramp's step
	ThrottleSince  int64     // the episode the current throttle began with
	Ramping        bool      // that throttle began with a resume
	Asked          bool      // the last change asked to apply a throttle
	PauseUntil     time.Time // a pause's end, when the evaluator resumes it
	Downstream     string    // the downstream episode that started this one: "name#episode"
	// Lowered and LoweredKind are read only: where rows written before
	// schema version 14 kept what a throttle lowered (the actuation row
	// keeps it now), and an actuation row's own columns when a query of
	// circuit rows reads one.
	Lowered         string `table:",readonly"`
	LoweredKind     string `table:",readonly"`
	Released        string // the settings a throttle handed back, and why
	legacyActuation        // read only: how rows written before schema version 13 kept the actuation
	Incarnation     string // random, set at creation: tells a re-created circuit from the deleted one
	RecentChanges   string // Unix seconds of the last changes, comma-separated, oldest first
	AckedEpisode    int64  // the episode someone acknowledged: its reminders stop
	AckedBy         string
	AckedAt         time.Time
	FenceLease      string // the lease under which the state was last written
	FenceGeneration int64  // and its generation: older generations are refused
}

// toCircuit is the row as a circuit, with its actuation (nil: none
// stored).
func (r circuitRow) toCircuit(act *actuationRow) (circuit.Circuit, error) {
	function := strings.TrimPrefix(r.RowKey, circuitPrefix)
	st, err := circuit.ParseState(r.State)
	if err != nil {
		return circuit.Circuit{}, fmt.Errorf("storage: circuit %s/%s: %w", r.PartitionKey, function, err)
	}
	set, err := r.settings()
	if err != nil {
		return circuit.Circuit{}, fmt.Errorf("storage: circuit %s/%s: %w", r.PartitionKey, function, err)
	}
	changes, err := unixList(r.RecentChanges)
	if err != nil {
		return circuit.Circuit{}, fmt.Errorf("storage: circuit %s/%s: RecentChanges: %w", r.PartitionKey, function, err)
	}
	actuation, err := r.actuationOf(act)
	if err != nil {
		return circuit.Circuit{}, fmt.Errorf("storage: circuit %s/%s: Lowered: %w", r.PartitionKey, function, err)
	}
	return circuit.Circuit{
		AppID: r.PartitionKey, Function: function,
		Settings:      set,
		RecentChanges: changes,
		Actuation:     actuation,
		AckedEpisode:  r.AckedEpisode,
		AckedBy:       r.AckedBy,
		AckedAt:       r.AckedAt,
		Streak:        int(r.Streak),
		Held:          r.Held,
		ThrottleStage: int(max(r.ThrottleStage, 0)),
		Released:      truncate(r.Released, maxReleased),
		ThrottleSince: r.ThrottleSince,
		Ramping:       r.Ramping,
		Asked:         r.Asked,
		PauseUntil:    r.PauseUntil,
		Downstream:    truncate(r.Downstream, 100),
		State:         st,
		Episode:       r.Episode,
		ChangedAt:     r.ChangedAt,
		Reason:        r.Reason,
		Incarnation:   r.Incarnation,
		Version:       string(r.ETag),
	}, nil
}

// setState copies a circuit's state fields into the row.
func (r *circuitRow) setState(c circuit.Circuit) {
	r.State, r.Episode, r.ChangedAt, r.Reason = c.State.String(), c.Episode, c.ChangedAt, c.Reason
	r.Streak, r.Held, r.ThrottleStage = int32(c.Streak), c.Held, int32(c.ThrottleStage)
	r.ThrottleSince, r.Ramping, r.Asked, r.Released = c.ThrottleSince, c.Ramping, c.Asked, truncate(c.Released, maxReleased)
	r.PauseUntil, r.Downstream = c.PauseUntil, c.Downstream
	r.RecentChanges = joinUnix(c.RecentChanges)
}

// List returns every circuit, ordered by app then function.
func (c *Circuits) List(ctx context.Context) ([]circuit.Circuit, error) {
	c.listing.Add(1)
	defer c.listing.Add(-1)
	c.mu.Lock()
	defer c.mu.Unlock()
	start, writes := time.Now(), c.writes.Load()
	if c.cache == nil {
		c.inc = newIncremental(circuitMargin)
	}
	full, since := c.inc.next(start)
	filter := circuitsAndActuations
	if !full {
		filter = tablestore.And(filter, tablestore.Ge("Timestamp", since))
	}
	rows, faults, err := readRows[circuitRow](ctx, c.table, tablestore.Query{Filter: filter, Served: c.inc.served}, TableCircuits,
		checkCircuitRow)
	if err != nil {
		return nil, fmt.Errorf("storage: list circuits: %w", err)
	}
	if full {
		c.cache = make(map[string]circuitRow, len(rows))
		c.faults.Replace(TableCircuits, faults)
	} else {
		c.faults.Add(faults...)
	}
	c.inc.done(full, start)
	for _, r := range rows {
		key := r.PartitionKey + "/" + r.RowKey
		c.cache[key] = r
		c.faults.Clear(TableCircuits, key)
		c.inc.saw(r.Timestamp)
	}
	for _, f := range faults {
		delete(c.cache, f.Key) // it was readable once; it is not now
	}
	if full || len(rows) > 0 || len(faults) > 0 {
		c.sorted = nil
	}
	if c.sorted == nil {
		c.sorted = c.convert()
	}
	c.last.Store(&listed{circuits: c.sorted, began: start, writes: writes})
	return slices.Clone(c.sorted), nil
}

// Recent is List for pages: the circuits as this instance's last list saw
// them, when that read began within maxAge (or, while another list is
// being read, within twice that) and nothing was written through c since;
// else a new list. Every instance's evaluator lists each second, so a page
// costs no storage read and does not wait behind the minutely full read (a
// second at 10,000 circuits); a change made on this instance shows at
// once, one made elsewhere within maxAge. The slice is shared by every
// caller: read it, never change it.
func (c *Circuits) Recent(ctx context.Context, maxAge time.Duration) ([]circuit.Circuit, error) {
	if l := c.last.Load(); l != nil && l.writes == c.writes.Load() {
		age := time.Since(l.began)
		if age <= maxAge || (age <= 2*maxAge && c.listing.Load() > 0) {
			return l.circuits, nil
		}
	}
	return c.List(ctx)
}

// wrote counts a write through c, done or failed (a failed call may still
// have reached storage), for Recent.
func (c *Circuits) wrote() { c.writes.Add(1) }

// convert turns the cached rows into circuits, ordered by app then
// function. Their slices are clipped: a caller that appends to one gets
// its own copy and leaves the cache's alone.
func (c *Circuits) convert() []circuit.Circuit {
	keys := make([]string, 0, len(c.cache))
	for k, r := range c.cache {
		if strings.HasPrefix(r.RowKey, circuitPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]circuit.Circuit, 0, len(keys))
	next := make(map[string]convertedCircuit, len(keys))
	for _, k := range keys {
		r := c.cache[k]
		var act *actuationRow
		if a, ok := c.cache[r.PartitionKey+"/"+actuationKey(strings.TrimPrefix(r.RowKey, circuitPrefix))]; ok {
			act = asActuation(a)
		}
		conv := convertedCircuit{row: r.ETag}
		if act != nil {
			conv.actuation = act.ETag
		}
		if old, ok := c.converted[k]; ok && old.row == conv.row && old.actuation == conv.actuation {
			conv.ci = old.ci
		} else {
			conv.ci, _ = r.toCircuit(act) // checked when read
			ci := &conv.ci
			ci.Recipients, ci.Channels, ci.RecentChanges = slices.Clip(ci.Recipients), slices.Clip(ci.Channels), slices.Clip(ci.RecentChanges)
			ci.Escalate.To = slices.Clip(ci.Escalate.To)
		}
		next[k] = conv
		out = append(out, conv.ci)
	}
	c.converted = next
	return out
}

// Get reads one circuit: its row and its actuation, at once.
func (c *Circuits) Get(ctx context.Context, appID, function string) (circuit.Circuit, error) {
	var act *actuationRow
	var actErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		act, _, actErr = c.readActuation(ctx, appID, function)
	}()
	row, err := c.row(ctx, appID, function)
	<-done
	if err != nil {
		return circuit.Circuit{}, err
	}
	if actErr != nil {
		return circuit.Circuit{}, actErr
	}
	return row.toCircuit(act)
}

func (c *Circuits) row(ctx context.Context, appID, function string) (circuitRow, error) {
	var row circuitRow
	if w := c.watched.Load(); w != nil && w.appID == appID && w.function == function {
		w.reads.Add(1)
	}
	if err := c.table.Get(ctx, appID, circuitKey(function), &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return row, fmt.Errorf("%w: %s/%s", ErrNoCircuit, appID, function)
		}
		return row, fmt.Errorf("storage: get circuit %s/%s: %w", appID, function, err)
	}
	row.keepColumnSettings()
	c.fences.keep(row.PartitionKey, row.RowKey, row.ETag, row.FenceLease, row.FenceGeneration)
	return row, nil
}

// CountReads counts from now on this instance's reads of one circuit's
// row (one circuit at a time); the answer says how many so far.
func (c *Circuits) CountReads(appID, function string) func() int64 {
	w := &watchedRow{appID: appID, function: function}
	c.watched.Store(w)
	return w.reads.Load
}

// Create inserts a new circuit; one that exists is circuit.ErrConflict.
func (c *Circuits) Create(ctx context.Context, ci circuit.Circuit) error {
	row := circuitRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: circuitKey(ci.Function)}, Incarnation: newIncarnation()}
	row.setSettings(ci)
	row.setState(ci)
	defer c.wrote()
	// With its actuation, which replaces any a deleted circuit left.
	b := c.table.NewBatch(ci.AppID)
	if err := errors.Join(b.Insert(&row), b.Upsert(actuationRowOf(ci, row.Incarnation))); err != nil {
		return err
	}
	if err := b.Submit(ctx); err != nil {
		return fmt.Errorf("storage: create circuit %s: %w", ci.ID(), conflictAsCircuit(err))
	}
	return nil
}

// Acknowledge records who acknowledged which episode: one merge, on
// condition that the circuit is still at ci.Version.
func (c *Circuits) Acknowledge(ctx context.Context, ci circuit.Circuit) error {
	defer c.wrote()
	row := &ackRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: circuitKey(ci.Function), ETag: tablestore.ETag(ci.Version)},
		AckedEpisode: ci.AckedEpisode, AckedBy: ci.AckedBy, AckedAt: ci.AckedAt}
	if err := c.table.Merge(ctx, row); err != nil {
		return fmt.Errorf("storage: acknowledge circuit %s: %w", ci.ID(), missingOrConflict(err, ci))
	}
	return nil
}

// ackRow is what an acknowledgement merges into a circuit's row.
type ackRow struct {
	tablestore.Meta
	AckedEpisode int64
	AckedBy      string
	AckedAt      time.Time
}

func (*ackRow) ClearsTimes() {}

// missingOrConflict is a conditional write's error as circuit.Service
// reads it: a row that is gone is ErrNoCircuit, a row that changed a
// conflict to retry.
func missingOrConflict(err error, ci circuit.Circuit) error {
	if errors.Is(err, tablestore.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoCircuit, ci.ID())
	}
	return conflictAsCircuit(err)
}

// Delete removes a circuit, on condition that it is still at version, and
// then its flip log.
func (c *Circuits) Delete(ctx context.Context, appID, function, version string) error {
	defer c.wrote()
	if err := c.table.Delete(ctx, appID, circuitKey(function), tablestore.ETag(version)); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return fmt.Errorf("%w: %s/%s", ErrNoCircuit, appID, function)
		}
		return fmt.Errorf("storage: delete circuit %s/%s: %w", appID, function, conflictAsCircuit(err))
	}
	c.mu.Lock()
	delete(c.cache, appID+"/"+circuitKey(function))
	delete(c.cache, appID+"/"+actuationKey(function))
	c.sorted = nil
	c.mu.Unlock()
	if err := c.table.Delete(ctx, appID, actuationKey(function), tablestore.AnyETag); err != nil && !errors.Is(err, tablestore.ErrNotFound) {
		// Left behind, it is of another incarnation than a circuit
		// created again: read as none.
		return fmt.Errorf("storage: delete actuation of %s/%s: %w", appID, function, err)
	}
	return c.deleteFlips(ctx, appID, function)
}

func (c *Circuits) deleteFlips(ctx context.Context, appID, function string) error {
	_, err := c.deleteFlipsAfter(ctx, appID, function, -1)
	return err
}

// deleteFlipsAfter deletes the flips of episodes after episode, and says
// how many.
func (c *Circuits) deleteFlipsAfter(ctx context.Context, appID, function string, episode int64) (int, error) {
	n := 0
	q := tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs(appID), tablestore.RowKeyPrefix(flipPrefix+function+"|")), Select: []string{"PartitionKey", "RowKey"}}
	for row, err := range tablestore.Rows[tablestore.Meta](ctx, c.table, q) {
		if err != nil {
			return n, fmt.Errorf("storage: delete flip log of %s/%s: %w", appID, function, err)
		}
		inv, perr := strconv.ParseInt(row.RowKey[strings.LastIndexByte(row.RowKey, '|')+1:], 10, 64)
		if perr == nil && math.MaxInt64-inv <= episode {
			continue
		}
		if err := c.table.Delete(ctx, row.PartitionKey, row.RowKey, tablestore.AnyETag); err != nil && !errors.Is(err, tablestore.ErrNotFound) {
			return n, fmt.Errorf("storage: delete flip log of %s/%s: %w", appID, function, err)
		}
		n++
	}
	return n, nil
}

// Put creates a circuit, or replaces its settings and state if it exists
// (seeding and tests). The fence of an existing row is kept.
func (c *Circuits) Put(ctx context.Context, ci circuit.Circuit) error {
	defer c.wrote()
	row, err := c.row(ctx, ci.AppID, ci.Function)
	switch {
	case errors.Is(err, ErrNoCircuit):
		row = circuitRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: circuitKey(ci.Function)}, Incarnation: newIncarnation()}
		row.setSettings(ci)
		row.setState(ci)
		err = c.table.Insert(ctx, &row)
		if err == nil {
			err = c.table.Upsert(ctx, actuationRowOf(ci, row.Incarnation))
		}
	case err == nil:
		// Put back to an earlier episode (a reseeded demo): flips of later
		// episodes would collide with the episodes to come, and links
		// mailed for them must not act on the new ones.
		dropped, derr := c.deleteFlipsAfter(ctx, ci.AppID, ci.Function, ci.Episode)
		if derr != nil {
			return derr
		}
		if dropped > 0 || ci.Episode < row.Episode {
			row.Incarnation = newIncarnation()
		}
		row.setSettings(ci)
		row.setState(ci)
		err = c.table.Update(ctx, &row)
		if err == nil {
			err = c.table.Upsert(ctx, actuationRowOf(ci, row.Incarnation))
		}
	}
	if err != nil {
		return fmt.Errorf("storage: put circuit %s: %w", ci.ID(), err)
	}
	return nil
}

// PutFlip writes a flip-log entry of ci as it is (seeding a demo's
// history); the same episode again replaces it.
func (c *Circuits) PutFlip(ctx context.Context, ci circuit.Circuit, fl circuit.Flip) error {
	if err := c.table.Upsert(ctx, flipRowOf(ci, fl)); err != nil {
		return fmt.Errorf("storage: put flip %d of %s: %w", fl.Episode, ci.ID(), err)
	}
	return nil
}

// Transition records a state change and its flip-log entry in one batch,
// on condition that the circuit is still at ci.Version (else
// tablestore.ErrConflict) and that f admits the write (else lease.ErrFenced).
// A zero fence (an operator's action) keeps the row's fence as it is.
func (c *Circuits) Transition(ctx context.Context, f lease.Fence, ci circuit.Circuit, fl circuit.Flip) error {
	if err := c.transitionAsRead(ctx, f, ci, fl); !errors.Is(err, errNotReadHere) {
		return err
	}
	row, err := c.row(ctx, ci.AppID, ci.Function)
	if err != nil {
		return err
	}
	return c.transition(ctx, f, row, ci, fl, nil)
}

// errNotReadHere is a write at a version whose fence this instance did
// not read: it reads the row first.
var errNotReadHere = errors.New("storage: the circuit was not read here at that version")

// transitionAsRead writes ci's state (merged) and its flip in one batch,
// on condition that the row is still at ci.Version, without reading it:
// a zero fence admits any row, and a lease's fence is checked against the
// fence the row held when this instance read it at ci.Version.
func (c *Circuits) transitionAsRead(ctx context.Context, f lease.Fence, ci circuit.Circuit, fl circuit.Flip) error {
	if ci.Version == "" {
		return errNotReadHere
	}
	var fence fenceOf
	if f.Lease != "" {
		held, ok := c.fences.of(ci.AppID, circuitKey(ci.Function), ci.Version)
		if !ok {
			return errNotReadHere
		}
		if err := f.Admits(held.lease, held.generation); err != nil {
			return fmt.Errorf("storage: transition %s: %w", ci.ID(), err)
		}
		fence = fenceOf{f.Lease, f.Generation}
	}
	defer c.wrote()
	b := c.table.NewBatch(ci.AppID)
	if err := b.Merge(stateOf(ci, fence)); err != nil {
		return err
	}
	if err := b.Insert(flipRowOf(ci, fl)); err != nil {
		return err
	}
	if err := b.Submit(ctx); err != nil {
		return fmt.Errorf("storage: transition %s to %s: %w", ci.ID(), ci.State, conflictAsCircuit(err))
	}
	return nil
}

// transition writes ci's state and its flip over row, the circuit as just
// read, in one batch on condition that it is still at ci.Version, with
// whatever also adds to the batch.
func (c *Circuits) transition(ctx context.Context, f lease.Fence, row circuitRow, ci circuit.Circuit, fl circuit.Flip, also func(*tablestore.Batch) error) error {
	if string(row.ETag) != ci.Version {
		return fmt.Errorf("storage: transition %s: %w (%w)", ci.ID(), circuit.ErrConflict, tablestore.ErrConflict)
	}
	if err := f.Admits(row.FenceLease, row.FenceGeneration); err != nil {
		return fmt.Errorf("storage: transition %s: %w", ci.ID(), err)
	}
	if err := keepLowered(ctx, c.table, row); err != nil {
		return err
	}
	row.setState(ci)
	if f.Lease != "" {
		row.FenceLease, row.FenceGeneration = f.Lease, f.Generation
	}
	defer c.wrote()
	b := c.table.NewBatch(ci.AppID)
	if err := b.Update(&row); err != nil {
		return err
	}
	if err := b.Insert(flipRowOf(ci, fl)); err != nil {
		return err
	}
	if also != nil {
		if err := also(b); err != nil {
			return err
		}
	}
	if err := b.Submit(ctx); err != nil {
		return fmt.Errorf("storage: transition %s to %s: %w", ci.ID(), ci.State, conflictAsCircuit(err))
	}
	return nil
}

// guardKey is the row, beside an app's circuits, that every trip its
// guardrail weighs rewrites in the same batch as the circuit: two
// instances that decided on the same reading of the app cannot both trip.
const guardKey = "g|guardrail"

// guardRow holds nothing but its ETag, which every write changes: with
// no field of its own, no content written by anyone can make it
// unreadable.
type guardRow struct{ tablestore.Meta }

// TransitionGuarded is Transition for a trip the app's guardrail limits.
// It reads the app's guard row, then every circuit of the app, and asks
// admit whether the trip may happen given them (and how many rows could
// not be read); if so it writes the circuit, its flip and the guard row
// in one batch, conditional on the circuit at ci.Version and the guard
// row as read. Every guarded trip rewrites the guard row, so a trip
// another instance committed after this read fails the batch
// (circuit.ErrConflict), and one committed before it is in the circuits
// read: no interleaving switches off more than admit allows. admit's
// error is returned as it is, with nothing written.
func (c *Circuits) TransitionGuarded(ctx context.Context, f lease.Fence, ci circuit.Circuit, fl circuit.Flip, admit func(app []circuit.Circuit, unreadable int) error) error {
	guard := guardRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: guardKey}}
	err := c.table.Get(ctx, ci.AppID, guardKey, &guard)
	fresh := errors.Is(err, tablestore.ErrNotFound)
	if err != nil && !fresh {
		return fmt.Errorf("storage: guardrail of %s: %w", ci.AppID, err)
	}
	q := tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs(ci.AppID), tablestore.RowKeyPrefix(circuitPrefix))}
	rows, faults, err := readRows[circuitRow](ctx, c.table, q, TableCircuits, checkCircuitRow)
	if err != nil {
		return fmt.Errorf("storage: circuits of %s: %w", ci.AppID, err)
	}
	app := make([]circuit.Circuit, 0, len(rows))
	var own *circuitRow // the tripping circuit, read with the rest
	for i, r := range rows {
		cc, _ := r.toCircuit(nil) // checked when read; the guardrail weighs states only
		app = append(app, cc)
		if cc.Function == ci.Function {
			own = &rows[i]
		}
	}
	if err := admit(app, len(faults)); err != nil {
		return err
	}
	if own == nil {
		return fmt.Errorf("%w: %s", ErrNoCircuit, ci.ID())
	}
	return c.transition(ctx, f, *own, ci, fl, func(b *tablestore.Batch) error {
		if fresh {
			return b.Insert(&guard)
		}
		return b.Update(&guard)
	})
}

// maxReleased bounds what a circuit row says of the settings its
// throttle handed back.
const maxReleased = 1000

// update reads the row, applies change and writes it back if nobody wrote
// in between. A lost race is retried on the fresh row a few times: every
// change re-checks what it depends on (episode, fence), so applying it to a
// newer row is safe, and a small patch such as a drift note must not be
// dropped because the verifier or a tick wrote the row a moment earlier.
func (c *Circuits) update(ctx context.Context, f lease.Fence, appID, function string, change func(*circuitRow) error) error {
	const attempts = 3
	var err error
	for range attempts {
		err = c.updateOnce(ctx, f, appID, function, change)
		if !errors.Is(err, tablestore.ErrConflict) {
			return err
		}
	}
	return err
}

func (c *Circuits) updateOnce(ctx context.Context, f lease.Fence, appID, function string, change func(*circuitRow) error) error {
	row, err := c.row(ctx, appID, function)
	if err != nil {
		return err
	}
	if err := f.Admits(row.FenceLease, row.FenceGeneration); err != nil {
		return fmt.Errorf("storage: circuit %s/%s: %w", appID, function, err)
	}
	if err := change(&row); err != nil {
		return err
	}
	if err := keepLowered(ctx, c.table, row); err != nil {
		return err
	}
	if f.Lease != "" {
		row.FenceLease, row.FenceGeneration = f.Lease, f.Generation
	}
	defer c.wrote()
	if err := c.table.Update(ctx, &row); err != nil {
		return fmt.Errorf("storage: circuit %s/%s: %w", appID, function, conflictAsCircuit(err))
	}
	return nil
}

// conflictAsCircuit marks a lost race so that circuit.Service, which does
// not know storage's errors, can retry.
func conflictAsCircuit(err error) error {
	if errors.Is(err, tablestore.ErrConflict) || errors.Is(err, tablestore.ErrExists) {
		return fmt.Errorf("%w: %w", circuit.ErrConflict, err)
	}
	return err
}

// SetState records a circuit's state without a flip-log entry, under a
// fence (kept for the lease tests and migrations of state).
func (c *Circuits) SetState(ctx context.Context, f lease.Fence, ci circuit.Circuit) error {
	return c.update(ctx, f, ci.AppID, ci.Function, func(r *circuitRow) error {
		r.setState(ci)
		return nil
	})
}

type flipRow struct {
	tablestore.Meta // PartitionKey: app id; RowKey: "f|<function>|<MaxInt64-episode>"
	Function        string
	Episode         int64
	From, To        string
	At              time.Time
	Actor           string
	Count           int32
	Calls           int32     // failures and successes, for ratio rules
	Since           time.Time // the count covers failures in (Since, At]
	Threshold       int32
	WindowSeconds   int32
	Reason          string
	TraceParent     string // W3C traceparent of the report or request behind it
}

func flipRowOf(ci circuit.Circuit, f circuit.Flip) *flipRow {
	return &flipRow{
		Meta:     tablestore.Meta{PartitionKey: ci.AppID, RowKey: flipKey(ci.Function, f.Episode)},
		Function: ci.Function, Episode: f.Episode, From: f.From.String(), To: f.To.String(), At: f.At,
		Actor: f.Actor, Count: int32(f.Count), Calls: int32(f.Calls), Since: f.Since, Threshold: int32(f.Threshold), WindowSeconds: int32(f.Window / time.Second), Reason: f.Reason, TraceParent: f.TraceParent,
	}
}

// Flips returns up to limit flip-log entries of a circuit, newest first.
func (c *Circuits) Flips(ctx context.Context, appID, function string, limit int) ([]circuit.Flip, error) {
	q := tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs(appID), tablestore.RowKeyPrefix(flipPrefix+function+"|")), Top: int32(min(limit, 1000))}
	var out []circuit.Flip
	for r, err := range tablestore.Rows[flipRow](ctx, c.table, q) {
		if err != nil {
			return nil, fmt.Errorf("storage: flip log of %s/%s: %w", appID, function, err)
		}
		from, err1 := circuit.ParseState(r.From)
		to, err2 := circuit.ParseState(r.To)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("storage: flip log of %s/%s episode %d: %w", appID, function, r.Episode, err)
		}
		out = append(out, circuit.Flip{Episode: r.Episode, From: from, To: to, At: r.At, Actor: r.Actor, Count: int(r.Count), Calls: int(r.Calls), Since: r.Since,
			Threshold: int(r.Threshold), Window: time.Duration(r.WindowSeconds) * time.Second, Reason: r.Reason, TraceParent: r.TraceParent})
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// newIncarnation is a random id for a new circuit.
func newIncarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
