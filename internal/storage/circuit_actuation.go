package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// A circuit's actuation (what the switch applied, why it could not, what
// the host confirmed, drift) is its own entity beside the circuit's row,
// "a|" + function in the app's partition: the switch and the verifier
// write it every few seconds, and a transition decided on the circuit's
// row must not lose its version to them.
const actuationPrefix = "a|"

func actuationKey(function string) string { return actuationPrefix + function }

// actuationRow is the stored actuation. Episode is the episode its apply
// error and drift are about: a newer episode of the circuit reads them as
// none. Incarnation is the circuit's: a row left by a deleted circuit is
// not the new one's.
type actuationRow struct {
	tablestore.Meta
	Incarnation      string
	Episode          int64
	AppliedEpisode   int64
	AppliedAt        time.Time
	ApplyError       string
	ApplyRetryAt     time.Time
	ApplyAttempts    int32
	Drift            string
	DriftSince       time.Time
	Confirmation     string
	ConfirmedEpisode int64
	ConfirmedAt      time.Time
	FenceLease       string // the switch claim it was last written under
	FenceGeneration  int64
	// Lowered is what a throttle lowered, as circuit.FormatLowered spells
	// it ("": nothing), for LoweredKind's trigger.
	Lowered     string
	LoweredKind string
}

func (*actuationRow) ClearsTimes() {}

// legacyActuation are the columns in which a circuit's row kept its
// actuation before schema version 13: read when no actuation row of the
// circuit exists (a row an instance of the last release wrote), never
// written.
type legacyActuation struct {
	AppliedEpisode   int64     `table:",readonly"`
	AppliedAt        time.Time `table:",readonly"`
	ApplyError       string    `table:",readonly"`
	ApplyRetryAt     time.Time `table:",readonly"`
	ApplyAttempts    int32     `table:",readonly"`
	Drift            string    `table:",readonly"`
	DriftSince       time.Time `table:",readonly"`
	Confirmation     string    `table:",readonly"`
	ConfirmedEpisode int64     `table:",readonly"`
	ConfirmedAt      time.Time `table:",readonly"`
}

// actuationOf is the circuit row's actuation: its own row when there is
// one of this incarnation, else the row's old columns. What a throttle
// lowered is the actuation row's when it says, else the circuit row's old
// column (a row of the last release, which a replace moves: keepLowered).
func (r circuitRow) actuationOf(a *actuationRow) (circuit.Actuation, error) {
	if a == nil || a.Incarnation != r.Incarnation {
		l := r.legacyActuation
		a = &actuationRow{Episode: r.Episode, AppliedEpisode: l.AppliedEpisode, AppliedAt: l.AppliedAt, ApplyError: l.ApplyError,
			ApplyRetryAt: l.ApplyRetryAt, ApplyAttempts: l.ApplyAttempts, Drift: l.Drift, DriftSince: l.DriftSince,
			Confirmation: l.Confirmation, ConfirmedEpisode: l.ConfirmedEpisode, ConfirmedAt: l.ConfirmedAt}
	}
	out := circuit.Actuation{AppliedEpisode: a.AppliedEpisode, AppliedAt: a.AppliedAt, Version: string(a.ETag)}
	lowered, kind := a.Lowered, a.LoweredKind
	if lowered == "" {
		lowered, kind = r.Lowered, r.LoweredKind
	}
	var err error
	if out.Lowered, err = circuit.ParseLowered(lowered); err != nil {
		return circuit.Actuation{}, err
	}
	out.LoweredKind = kind
	switch conf := circuit.Confirmation(a.Confirmation); conf {
	case circuit.Confirmed, circuit.Contradicted, circuit.Unconfirmable:
		out.Confirmation, out.ConfirmedEpisode, out.ConfirmedAt = conf, a.ConfirmedEpisode, a.ConfirmedAt
	}
	if a.Episode == r.Episode {
		out.ApplyError, out.ApplyRetryAt, out.ApplyAttempts = truncate(a.ApplyError, maxApplyError), a.ApplyRetryAt, int(max(a.ApplyAttempts, 0))
		out.Drift, out.DriftSince = truncate(a.Drift, maxApplyError), a.DriftSince
	}
	return out, nil
}

// maxApplyError bounds what an actuation says of a failed switch or drift.
const maxApplyError = 2000

// asActuation is an actuation row read in a query of circuit rows: its
// columns are some of a circuit row's (the old ones), so it decodes as one.
func asActuation(r circuitRow) *actuationRow {
	l := r.legacyActuation
	return &actuationRow{Meta: r.Meta, Incarnation: r.Incarnation, Episode: r.Episode,
		AppliedEpisode: l.AppliedEpisode, AppliedAt: l.AppliedAt, ApplyError: l.ApplyError, ApplyRetryAt: l.ApplyRetryAt,
		ApplyAttempts: l.ApplyAttempts, Drift: l.Drift, DriftSince: l.DriftSince, Confirmation: l.Confirmation,
		ConfirmedEpisode: l.ConfirmedEpisode, ConfirmedAt: l.ConfirmedAt, FenceLease: r.FenceLease, FenceGeneration: r.FenceGeneration,
		Lowered: r.Lowered, LoweredKind: r.LoweredKind}
}

// readActuation reads a circuit's actuation row: nil when there is none,
// or when what is there does not decode (the next write replaces it,
// at the version read).
func (c *Circuits) readActuation(ctx context.Context, appID, function string) (*actuationRow, tablestore.ETag, error) {
	a, etag, err := getActuation(ctx, c.table, appID, function)
	if a != nil {
		c.fences.keep(a.PartitionKey, a.RowKey, a.ETag, a.FenceLease, a.FenceGeneration)
	}
	return a, etag, err
}

// getActuation reads a circuit's actuation row: nil when there is none,
// or when what is there does not decode or holds a Lowered record that
// does not parse (the next write replaces it, at the version read).
func getActuation(ctx context.Context, t *tablestore.Table, appID, function string) (*actuationRow, tablestore.ETag, error) {
	var a actuationRow
	err := t.Get(ctx, appID, actuationKey(function), &a)
	var bad *tablestore.RowError
	switch {
	case errors.Is(err, tablestore.ErrNotFound):
		return nil, "", nil
	case errors.As(err, &bad) || a.check() != nil:
		return nil, a.ETag, nil
	case err != nil:
		return nil, "", fmt.Errorf("storage: get actuation of %s/%s: %w", appID, function, err)
	}
	return &a, a.ETag, nil
}

// check says what makes a row others wrote unusable as an actuation: a
// Lowered record that does not parse, which would leave the circuit
// unreadable rather than its throttle without a record.
func (a *actuationRow) check() error {
	if _, err := circuit.ParseLowered(a.Lowered); err != nil {
		return fmt.Errorf("the Lowered record: %w", err)
	}
	return nil
}

// actuate changes ci's actuation row: read, change, written back on
// condition that nobody wrote it in between (a lost race is read again, a
// few times). A row of another incarnation, or none, starts afresh.
func (c *Circuits) actuate(ctx context.Context, f lease.Fence, ci circuit.Circuit, change func(*actuationRow) error) error {
	var err error
	for range 3 {
		var a *actuationRow
		var etag tablestore.ETag
		a, etag, err = c.readActuation(ctx, ci.AppID, ci.Function)
		if err != nil {
			return err
		}
		if a == nil || a.Incarnation != ci.Incarnation {
			a = &actuationRow{Incarnation: ci.Incarnation}
		} else if err := f.Admits(a.FenceLease, a.FenceGeneration); err != nil {
			return fmt.Errorf("storage: actuation of %s: %w", ci.ID(), err)
		}
		a.Meta = tablestore.Meta{PartitionKey: ci.AppID, RowKey: actuationKey(ci.Function), ETag: etag}
		if err := change(a); err != nil {
			return err
		}
		if f.Lease != "" {
			a.FenceLease, a.FenceGeneration = f.Lease, f.Generation
		}
		if err = c.writeActuation(ctx, a); !errors.Is(err, tablestore.ErrConflict) && !errors.Is(err, tablestore.ErrExists) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("storage: actuation of %s: %w", ci.ID(), conflictAsCircuit(err))
	}
	return nil
}

// writeActuation inserts a (no version) or replaces it at its version.
func (c *Circuits) writeActuation(ctx context.Context, a *actuationRow) error {
	defer c.wrote()
	if a.ETag == "" {
		return c.table.Insert(ctx, a)
	}
	return c.table.Update(ctx, a)
}

// moved is the refusal of a change made for an episode the actuation has
// passed.
func moved(ci circuit.Circuit, a *actuationRow) error {
	return fmt.Errorf("storage: circuit %s was switched for episode %d since: %w", ci.ID(), a.AppliedEpisode, circuit.ErrConflict)
}

// MarkApplied records that a switch set the trigger for ci's episode at
// the time given. A switch for an episode older than the one recorded is
// refused (circuit.ErrConflict): a slow switch call cannot undo a newer
// one. When the circuit closed with settings a throttle lowered, they are
// back: the actuation forgets them, in the same write.
func (c *Circuits) MarkApplied(ctx context.Context, f lease.Fence, ci circuit.Circuit, at time.Time) error {
	restored := ci.State == circuit.Closed && ci.Lowered != nil
	err := errNotReadHere
	if !restored {
		err = c.markAppliedAsRead(ctx, f, ci, at)
	}
	if errors.Is(err, errNotReadHere) || errors.Is(err, tablestore.ErrConflict) {
		err = c.actuate(ctx, f, ci, func(a *actuationRow) error {
			if a.AppliedEpisode > ci.Episode || a.Episode > ci.Episode {
				return moved(ci, a)
			}
			applied(a, ci.Episode, at)
			if restored {
				a.Lowered, a.LoweredKind = "", ""
			}
			return nil
		})
	}
	if err != nil || !restored {
		return err
	}
	return c.dropOldLowered(ctx, ci)
}

// dropOldLowered removes from ci's row the column in which the last
// release kept what a throttle lowered, now restored, so it does not read
// as lowered again: one read, and a write only while an instance of the
// last release wrote it (a rolling upgrade).
func (c *Circuits) dropOldLowered(ctx context.Context, ci circuit.Circuit) error {
	err := c.update(ctx, lease.Fence{}, ci.AppID, ci.Function, func(r *circuitRow) error {
		if r.Lowered == "" || r.Episode != ci.Episode {
			return errUnchanged // none, or a newer episode decides what is lowered
		}
		r.Lowered, r.LoweredKind = "", "" // read only: the replace drops them
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// errUnchanged is a change that finds nothing to change: nothing is
// written.
var errUnchanged = errors.New("storage: nothing to change")

// SetLowered records, for ci's episode, the app settings a throttle is
// about to change and what they were, before the switch writes them: what
// a later step or restore reads, so it is never what the throttle itself
// wrote. It is refused once a newer episode was switched.
func (c *Circuits) SetLowered(ctx context.Context, f lease.Fence, ci circuit.Circuit, kind string, before map[string]*string) error {
	raw, err := circuit.FormatLowered(before)
	if err != nil {
		return err
	}
	return c.actuate(ctx, f, ci, func(a *actuationRow) error {
		if a.AppliedEpisode > ci.Episode || a.Episode > ci.Episode {
			return moved(ci, a)
		}
		atEpisode(a, ci.Episode)
		a.Lowered, a.LoweredKind = raw, kind
		return nil
	})
}

// atEpisode makes a about episode: an older episode's switch error and
// drift are forgotten, and a slower switch of it is refused (moved).
func atEpisode(a *actuationRow, episode int64) {
	if a.Episode != episode {
		a.ApplyError, a.ApplyRetryAt, a.ApplyAttempts = "", time.Time{}, 0
		a.Drift, a.DriftSince = "", time.Time{}
		a.Episode = episode
	}
}

// ReleaseLowered replaces, for ci's episode, what a throttle holds
// lowered with before, and records released on the circuit: the settings
// it handed back and why.
func (c *Circuits) ReleaseLowered(ctx context.Context, f lease.Fence, ci circuit.Circuit, before map[string]*string, released string) error {
	raw, err := circuit.FormatLowered(before)
	if err != nil {
		return err
	}
	if err := c.actuate(ctx, f, ci, func(a *actuationRow) error {
		if a.AppliedEpisode > ci.Episode || a.Episode > ci.Episode {
			return moved(ci, a)
		}
		atEpisode(a, ci.Episode)
		a.Lowered = raw
		if a.LoweredKind == "" {
			a.LoweredKind = ci.LoweredKind
		}
		return nil
	}); err != nil {
		return err
	}
	return c.update(ctx, f, ci.AppID, ci.Function, func(r *circuitRow) error {
		if r.Episode != ci.Episode {
			return fmt.Errorf("storage: circuit %s moved to episode %d: %w", ci.ID(), r.Episode, circuit.ErrConflict)
		}
		r.Released = truncate(released, maxReleased)
		return nil
	})
}

// applied sets a to say episode was switched at at, with no error or
// drift left.
func applied(a *actuationRow, episode int64, at time.Time) {
	a.Episode, a.AppliedEpisode, a.AppliedAt = episode, episode, at
	a.ApplyError, a.ApplyRetryAt, a.ApplyAttempts = "", time.Time{}, 0
	a.Drift, a.DriftSince = "", time.Time{}
}

// markAppliedAsRead is MarkApplied as one merge at the actuation's
// version, when this instance read it at that version (its fence is
// known); tablestore.ErrConflict when it changed since.
func (c *Circuits) markAppliedAsRead(ctx context.Context, f lease.Fence, ci circuit.Circuit, at time.Time) error {
	v := ci.Actuation.Version
	if v == "" || ci.AppliedEpisode > ci.Episode {
		return errNotReadHere
	}
	held, ok := c.fences.of(ci.AppID, actuationKey(ci.Function), v)
	if !ok {
		return errNotReadHere
	}
	if err := f.Admits(held.lease, held.generation); err != nil {
		return fmt.Errorf("storage: actuation of %s: %w", ci.ID(), err)
	}
	a := appliedState{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: actuationKey(ci.Function), ETag: tablestore.ETag(v)}}
	var row actuationRow
	applied(&row, ci.Episode, at)
	a.Episode, a.AppliedEpisode, a.AppliedAt = row.Episode, row.AppliedEpisode, row.AppliedAt
	var e tablestore.Entity = &a
	if f.Lease != "" {
		e = &fencedApplied{appliedState: a, FenceLease: f.Lease, FenceGeneration: f.Generation}
	}
	defer c.wrote()
	return c.table.Merge(ctx, e)
}

// appliedState is what recording a switched trigger merges into an
// actuation row: the zero values clear the error and drift.
type appliedState struct {
	tablestore.Meta
	Episode        int64
	AppliedEpisode int64
	AppliedAt      time.Time
	ApplyError     string
	ApplyRetryAt   time.Time
	ApplyAttempts  int32
	Drift          string
	DriftSince     time.Time
}

func (*appliedState) ClearsTimes() {}

type fencedApplied struct {
	appliedState
	FenceLease      string
	FenceGeneration int64
}

func (*fencedApplied) ClearsTimes() {}

// SetApplyError records that the trigger could not be set for ci's
// episode, why, and when the switch tries again.
func (c *Circuits) SetApplyError(ctx context.Context, f lease.Fence, ci circuit.Circuit, problem string, attempts int, retryAt time.Time) error {
	return c.actuate(ctx, f, ci, func(a *actuationRow) error {
		if a.AppliedEpisode >= ci.Episode {
			return moved(ci, a)
		}
		atEpisode(a, ci.Episode)
		a.ApplyError, a.ApplyAttempts, a.ApplyRetryAt = truncate(problem, maxApplyError), int32(attempts), retryAt
		return nil
	})
}

// SetDrift records (or clears, with "") a trigger found in the wrong
// position for ci's episode, once applied.
func (c *Circuits) SetDrift(ctx context.Context, f lease.Fence, ci circuit.Circuit, drift string, now time.Time) error {
	return c.actuate(ctx, f, ci, func(a *actuationRow) error {
		if a.AppliedEpisode != ci.Episode {
			return moved(ci, a)
		}
		if drift != "" && (a.Drift == "" || a.Episode != ci.Episode) {
			a.DriftSince = now
		}
		if drift == "" {
			a.DriftSince = time.Time{}
		}
		a.Episode, a.Drift = ci.Episode, truncate(drift, maxApplyError)
		return nil
	})
}

// SetConfirmation records what the host reported about the trigger of
// ci's episode, once applied. It leaves the actuation's fence as the
// switch wrote it: the verifier's lease must not take over the fencing of
// the switch's writes.
func (c *Circuits) SetConfirmation(ctx context.Context, _ lease.Fence, ci circuit.Circuit, got circuit.Confirmation, at time.Time) error {
	return c.actuate(ctx, lease.Fence{}, ci, func(a *actuationRow) error {
		if a.AppliedEpisode != ci.Episode {
			return moved(ci, a)
		}
		a.Confirmation, a.ConfirmedEpisode, a.ConfirmedAt = string(got), ci.Episode, at
		return nil
	})
}

// Reapply marks ci's episode as not applied, so the switch sets the
// trigger again (an operator overriding drift).
func (c *Circuits) Reapply(ctx context.Context, ci circuit.Circuit) error {
	return c.actuate(ctx, lease.Fence{}, ci, func(a *actuationRow) error {
		a.Episode, a.AppliedEpisode = ci.Episode, -1
		a.Drift, a.DriftSince = "", time.Time{}
		a.ApplyError, a.ApplyRetryAt, a.ApplyAttempts = "", time.Time{}, 0
		return nil
	})
}

// actuationRowOf is ci's actuation as a row of incarnation (seeding and
// creation).
func actuationRowOf(ci circuit.Circuit, incarnation string) *actuationRow {
	return &actuationRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: actuationKey(ci.Function)}, Incarnation: incarnation,
		Episode: ci.Episode, AppliedEpisode: ci.AppliedEpisode, AppliedAt: ci.AppliedAt, ApplyError: truncate(ci.ApplyError, maxApplyError),
		ApplyRetryAt: ci.ApplyRetryAt, ApplyAttempts: int32(ci.ApplyAttempts), Drift: truncate(ci.Drift, maxApplyError), DriftSince: ci.DriftSince,
		Confirmation: string(ci.Confirmation), ConfirmedEpisode: ci.ConfirmedEpisode, ConfirmedAt: ci.ConfirmedAt,
		Lowered: loweredJSON(ci.Lowered), LoweredKind: ci.LoweredKind}
}

// loweredJSON is m as a row spells it; a map that does not format (it
// came from a row, so it did once) is written as none.
func loweredJSON(m map[string]*string) string {
	raw, err := circuit.FormatLowered(m)
	if err != nil {
		return ""
	}
	return raw
}
