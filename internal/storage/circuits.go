package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
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
