package storage

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"

	"github.com/fusebox/fusebox/internal/tablestore"
)

// deleteMatching removes every row the filter matches, in batches per
// partition, and returns how many it removed. Rows that another instance
// removed first count as removed; rows it cannot read are skipped.
func deleteMatching(ctx context.Context, table *tablestore.Table, filter tablestore.Filter) (int, error) {
	n := 0
	batches := map[string]*tablestore.Batch{}
	flush := func(pk string) error {
		b := batches[pk]
		delete(batches, pk)
		if b == nil {
			return nil
		}
		count := b.Len()
		if err := b.Submit(ctx); err != nil && !errors.Is(err, tablestore.ErrNotFound) {
			return err
		}
		n += count
		return nil
	}
	q := tablestore.Query{Filter: filter, Select: []string{"PartitionKey", "RowKey"}}
	for row, err := range tablestore.Rows[tablestore.Meta](ctx, table, q) {
		if err != nil {
			var rowErr *tablestore.RowError
			if errors.As(err, &rowErr) {
				continue
			}
			return n, err
		}
		b := batches[row.PartitionKey]
		if b == nil {
			b = table.NewBatch(row.PartitionKey)
			batches[row.PartitionKey] = b
		}
		if err := b.Delete(row.PartitionKey, row.RowKey, tablestore.AnyETag); err != nil {
			return n, err
		}
		if b.Len() == tablestore.MaxBatchActions {
			if err := flush(row.PartitionKey); err != nil {
				return n, err
			}
		}
	}
	for pk := range batches {
		if err := flush(pk); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Retention of what the pruner removes.
const (
	// FailureRetention covers the longest window a circuit may have, plus
	// an hour for pages that look back.
	FailureRetention = circuit.MaxWindow + time.Hour
	RateRetention    = 8 * 24 * time.Hour
	RunRetention     = 35 * 24 * time.Hour
)

// Prune removes failure rows, per-minute rates, job runs, idempotency
// records and delivered or failed alerts past their retention, and
// returns how many failure rows it removed.
func (s *Store) Prune(ctx context.Context, now time.Time) (int, error) {
	n, err := s.Failures.DeleteBefore(ctx, now.Add(-FailureRetention))
	_, err2 := s.Rates.DeleteBefore(ctx, now.Add(-RateRetention))
	_, err3 := s.Runs.DeleteBefore(ctx, now.Add(-RunRetention))
	_, err4 := s.Status.DeleteIdempotencyBefore(ctx, now.Add(-IdempotencyRetention))
	_, err5 := s.Outbox.DeleteBefore(ctx, now.Add(-OutboxRetention))
	_, err6 := s.HostSamples.DeleteBefore(ctx, now.Add(-HostSampleRetention))
	_, err7 := s.Arrivals.DeleteBefore(ctx, now.Add(-ArrivalRetention))
	_, err8 := s.Replays.DeleteBefore(ctx, now.Add(-ReplayHistoryRetention), now.Add(-ReplayRecordRetention))
	_, err9 := s.Alerts.DeleteBefore(ctx, now.Add(-AlertRetention))
	return n, errors.Join(err, err2, err3, err4, err5, err6, err7, err8, err9)
}
