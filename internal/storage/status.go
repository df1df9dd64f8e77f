package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Status keeps what background loops report about themselves, for the
// dashboard, which may run on another instance than the loop.
type Status struct{ table *tablestore.Table }

type evaluatorRow struct {
	tablestore.Meta // PartitionKey: "status"; RowKey: "evaluator"
	Leader          string
	LastTickAt      time.Time
	TickMillis      int64
	Rejected        int64
	LastRejected    string
	RejectedAt      time.Time
}

// PutEvaluator records the evaluator's status.
func (s *Status) PutEvaluator(ctx context.Context, st circuit.Status) error {
	row := &evaluatorRow{Meta: tablestore.Meta{PartitionKey: "status", RowKey: "evaluator"}, Leader: st.Leader, LastTickAt: st.LastTickAt,
		TickMillis: st.TickDuration.Milliseconds(), Rejected: st.Rejected, LastRejected: st.LastRejected, RejectedAt: st.RejectedAt}
	if err := s.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: evaluator status: %w", err)
	}
	return nil
}

// Evaluator reads the evaluator's status; the zero Status when it never ran.
func (s *Status) Evaluator(ctx context.Context) (circuit.Status, error) {
	var row evaluatorRow
	err := s.table.Get(ctx, "status", "evaluator", &row)
	if errors.Is(err, tablestore.ErrNotFound) {
		return circuit.Status{}, nil
	}
	if err != nil {
		return circuit.Status{}, fmt.Errorf("storage: evaluator status: %w", err)
	}
	return circuit.Status{Leader: row.Leader, LastTickAt: row.LastTickAt, TickDuration: time.Duration(row.TickMillis) * time.Millisecond,
		Rejected: row.Rejected, LastRejected: row.LastRejected, RejectedAt: row.RejectedAt}, nil
}
