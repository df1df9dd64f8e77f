package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Outbox keeps alert mails in one partition, keyed by the message's derived
// id (circuit, episode, kind, recipient), so a message can exist only once.
type Outbox struct {
	table  *tablestore.Table
	faults *Faults
}

const outboxPartition = "msg"

type outboxRow struct {
	tablestore.Meta // PartitionKey: "msg"; RowKey: encoded message id
	Circuit         string
	Episode         int64
	Kind            string
	To              string
	State           string
	Attempts        int32
	NextAttempt     time.Time
	LastError       string
	CreatedAt       time.Time
	SentAt          time.Time
	ClaimedAt       time.Time
	FenceLease      string
	FenceGeneration int64
}

func (r outboxRow) message() alerts.Message {
	return alerts.Message{ID: alerts.MessageID(r.Circuit, r.Episode, r.Kind, r.To), Circuit: r.Circuit, Episode: r.Episode, Kind: r.Kind, To: r.To,
		State: r.State, Attempts: int(r.Attempts), NextAttempt: r.NextAttempt, LastError: r.LastError, CreatedAt: r.CreatedAt,
		SentAt: r.SentAt, ClaimedAt: r.ClaimedAt, Version: string(r.ETag)}
}

// read checks a row as well as its types: a message with an unknown state
// or no destination is a fault, not a message.
func (r outboxRow) read() (alerts.Message, error) {
	switch r.State {
	case alerts.Pending, alerts.Sending, alerts.Sent, alerts.Failed:
	default:
		return alerts.Message{}, fmt.Errorf("storage: outbox %s: unknown state %q", r.RowKey, r.State)
	}
	if r.Circuit == "" || r.To == "" || r.Kind == "" {
		return alerts.Message{}, fmt.Errorf("storage: outbox %s: Circuit, Kind and To must all be set", r.RowKey)
	}
	return r.message(), nil
}

func (r *outboxRow) set(m alerts.Message) {
	r.Circuit, r.Episode, r.Kind, r.To, r.State = m.Circuit, m.Episode, m.Kind, m.To, m.State
	r.Attempts, r.NextAttempt, r.LastError, r.CreatedAt, r.SentAt, r.ClaimedAt = int32(m.Attempts), m.NextAttempt, truncate(m.LastError, 1024), m.CreatedAt, m.SentAt, m.ClaimedAt
}

// Ensure inserts a message unless one with its id exists.
func (o *Outbox) Ensure(ctx context.Context, m alerts.Message) error {
	row := &outboxRow{Meta: tablestore.Meta{PartitionKey: outboxPartition, RowKey: leaseKey(m.ID)}}
	row.set(m)
	if err := o.table.Insert(ctx, row); err != nil && !errors.Is(err, tablestore.ErrExists) {
		return fmt.Errorf("storage: outbox: %w", err)
	}
	return nil
}

// Due returns pending messages whose time has come and messages whose
// claim is older than staleClaims.
func (o *Outbox) Due(ctx context.Context, now, staleClaims time.Time) ([]alerts.Message, error) {
	f := tablestore.And(tablestore.PartitionIs(outboxPartition), tablestore.Or(
		tablestore.And(tablestore.Eq("State", alerts.Pending), tablestore.Le("NextAttempt", now)),
		tablestore.And(tablestore.Eq("State", alerts.Sending), tablestore.Le("ClaimedAt", staleClaims)),
	))
	out, faults, err := readRows[outboxRow](ctx, o.table, tablestore.Query{Filter: f}, TableOutbox, outboxRow.read)
	if err != nil {
		return nil, fmt.Errorf("storage: outbox due: %w", err)
	}
	// Due reads part of the table: it adds what it finds, and Recent,
	// which reads all of it, keeps the list whole.
	o.faults.Add(faults...)
	return out, nil
}

// Update writes a message on condition that it is still at m.Version and
// that f admits the write; a lost race is circuit.ErrConflict.
func (o *Outbox) Update(ctx context.Context, f lease.Fence, m alerts.Message) (alerts.Message, error) {
	var row outboxRow
	if err := o.table.Get(ctx, outboxPartition, leaseKey(m.ID), &row); err != nil {
		return m, fmt.Errorf("storage: outbox %s: %w", m.ID, conflictAsCircuit(err))
	}
	if string(row.ETag) != m.Version {
		return m, fmt.Errorf("storage: outbox %s: %w", m.ID, circuit.ErrConflict)
	}
	if err := f.Admits(row.FenceLease, row.FenceGeneration); err != nil {
		return m, fmt.Errorf("storage: outbox %s: %w", m.ID, err)
	}
	row.set(m)
	if f.Lease != "" {
		row.FenceLease, row.FenceGeneration = f.Lease, f.Generation
	}
	if err := o.table.Update(ctx, &row); err != nil {
		return m, fmt.Errorf("storage: outbox %s: %w", m.ID, conflictAsCircuit(err))
	}
	return row.message(), nil
}

// Recent returns up to limit messages, newest first.
func (o *Outbox) Recent(ctx context.Context, limit int) ([]alerts.Message, error) {
	out, faults, err := readRows[outboxRow](ctx, o.table, tablestore.Query{Filter: tablestore.PartitionIs(outboxPartition)}, TableOutbox, outboxRow.read)
	if err != nil {
		return nil, fmt.Errorf("storage: outbox: %w", err)
	}
	o.faults.Replace(TableOutbox, faults)
	// Newest first by creation time; the partition is small (pruned to days).
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].CreatedAt.After(out[j-1].CreatedAt); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// OutboxRetention is how long sent and failed messages stay on the
// Notifications page.
const OutboxRetention = 30 * 24 * time.Hour

// DeleteBefore removes messages sent, or failed, before t: pending ones
// stay, whatever their age, until they are delivered or given up.
func (o *Outbox) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	sent, err := deleteMatching(ctx, o.table, tablestore.And(tablestore.PartitionIs(outboxPartition), tablestore.Eq("State", alerts.Sent), tablestore.Lt("SentAt", t)))
	if err != nil {
		return sent, fmt.Errorf("storage: prune outbox: %w", err)
	}
	failed, err := deleteMatching(ctx, o.table, tablestore.And(tablestore.PartitionIs(outboxPartition), tablestore.Eq("State", alerts.Failed), tablestore.Lt("CreatedAt", t)))
	if err != nil {
		return sent + failed, fmt.Errorf("storage: prune outbox: %w", err)
	}
	return sent + failed, nil
}

// OfEpisodes returns the messages of one circuit's episodes first to
// last, oldest first, at most limit of them.
func (o *Outbox) OfEpisodes(ctx context.Context, circuitID string, first, last int64, limit int) ([]alerts.Message, error) {
	q := tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs(outboxPartition), tablestore.Eq("Circuit", circuitID),
		tablestore.Ge("Episode", first), tablestore.Le("Episode", last))}
	var out []alerts.Message
	for r, err := range tablestore.Rows[outboxRow](ctx, o.table, q) {
		if err != nil {
			return nil, fmt.Errorf("storage: outbox of %s: %w", circuitID, err)
		}
		m, err := r.read()
		if err != nil {
			continue // a fault: the Notifications page lists it
		}
		out = append(out, m)
		if len(out) == limit {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b alerts.Message) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}
