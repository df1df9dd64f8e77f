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

// Circuits holds one row per circuit, partitioned by app so an app's
// circuits are read together.
type Circuits struct{ table *tablestore.Table }

type circuitRow struct {
	tablestore.Meta        // PartitionKey: app id; RowKey: function name
	Threshold       int32  // failures
	WindowSeconds   int32  // length of the rolling window
	State           string // closed, open, half-open, forced-open
	Episode         int64
	ChangedAt       time.Time
	Reason          string
	FenceLease      string // the lease under which the state was last written
	FenceGeneration int64  // and its generation: older generations are refused
}

func (r circuitRow) toCircuit() (circuit.Circuit, error) {
	st, err := circuit.ParseState(r.State)
	if err != nil {
		return circuit.Circuit{}, fmt.Errorf("storage: circuit %s/%s: %w", r.PartitionKey, r.RowKey, err)
	}
	if r.Threshold < 1 || r.WindowSeconds < 1 {
		return circuit.Circuit{}, fmt.Errorf("storage: circuit %s/%s: threshold %d and window %ds must both be positive", r.PartitionKey, r.RowKey, r.Threshold, r.WindowSeconds)
	}
	return circuit.Circuit{
		AppID: r.PartitionKey, Function: r.RowKey, Threshold: int(r.Threshold),
		Window: time.Duration(r.WindowSeconds) * time.Second, State: st, Episode: r.Episode,
		ChangedAt: r.ChangedAt, Reason: r.Reason,
	}, nil
}

// List returns every circuit, ordered by app then function.
func (c *Circuits) List(ctx context.Context) ([]circuit.Circuit, error) {
	rows, err := tablestore.All[circuitRow](ctx, c.table, tablestore.Query{})
	if err != nil {
		return nil, fmt.Errorf("storage: list circuits: %w", err)
	}
	out := make([]circuit.Circuit, 0, len(rows))
	for _, r := range rows {
		ci, err := r.toCircuit()
		if err != nil {
			return nil, err
		}
		out = append(out, ci)
	}
	return out, nil
}

// Put creates or replaces a circuit.
func (c *Circuits) Put(ctx context.Context, ci circuit.Circuit) error {
	row := &circuitRow{
		Meta:      tablestore.Meta{PartitionKey: ci.AppID, RowKey: ci.Function},
		Threshold: int32(ci.Threshold), WindowSeconds: int32(ci.Window / time.Second),
		State: ci.State.String(), Episode: ci.Episode, ChangedAt: ci.ChangedAt, Reason: ci.Reason,
	}
	if err := c.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: put circuit %s: %w", ci.ID(), err)
	}
	return nil
}

// ErrNoCircuit is a write to a circuit that does not exist.
var ErrNoCircuit = errors.New("storage: no such circuit")

// SetState records a circuit's state, episode and reason under a lease
// fence: the write is refused with lease.ErrFenced if the circuit was last
// written under a newer generation of the same lease, and it is
// conditional on the row's ETag, so a concurrent change is
// tablestore.ErrConflict for the caller to reread and retry.
func (c *Circuits) SetState(ctx context.Context, f lease.Fence, ci circuit.Circuit) error {
	var row circuitRow
	if err := c.table.Get(ctx, ci.AppID, ci.Function, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNoCircuit, ci.ID())
		}
		return fmt.Errorf("storage: set state of %s: %w", ci.ID(), err)
	}
	if err := f.Admits(row.FenceLease, row.FenceGeneration); err != nil {
		return fmt.Errorf("storage: set state of %s: %w", ci.ID(), err)
	}
	row.State, row.Episode, row.ChangedAt, row.Reason = ci.State.String(), ci.Episode, ci.ChangedAt, ci.Reason
	row.FenceLease, row.FenceGeneration = f.Lease, f.Generation
	if err := c.table.Update(ctx, &row); err != nil {
		return fmt.Errorf("storage: set state of %s: %w", ci.ID(), err)
	}
	return nil
}

// Get reads one circuit.
func (c *Circuits) Get(ctx context.Context, appID, function string) (circuit.Circuit, error) {
	var row circuitRow
	if err := c.table.Get(ctx, appID, function, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return circuit.Circuit{}, fmt.Errorf("%w: %s/%s", ErrNoCircuit, appID, function)
		}
		return circuit.Circuit{}, fmt.Errorf("storage: get circuit %s/%s: %w", appID, function, err)
	}
	return row.toCircuit()
}
