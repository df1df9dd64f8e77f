package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Rates keeps failures per circuit per minute, rolled up from the Failures
// table once a minute has passed, for charts of the last hour and day. A
// row exists only for a minute with failures, so charts cost what failed.
type Rates struct{ table *tablestore.Table }

type rateRow struct {
	tablestore.Meta           // PartitionKey: app id; RowKey: function|yyyyMMddHHmm
	Function        string    // the function
	Minute          time.Time // the minute's start, UTC
	Count           int64     // failures in that minute
}

// MinuteCount is one minute's failures of one circuit.
type MinuteCount = circuit.MinuteCount

// Rollup adds up the failures of one minute per circuit and stores them.
// It replaces what an earlier rollup of the same minute stored, so running
// it again, after late rows arrived, is safe.
func (r *Rates) Rollup(ctx context.Context, f *Failures, minute time.Time) (int, error) {
	minute = minute.UTC().Truncate(time.Minute)
	// The grace around the minute: a record is left out for a span of
	// the same calls in the next or the last minute (circuit.Countable).
	end := minute.Add(time.Minute - time.Second)
	rows, _, err := f.ReadFailures(ctx, minute.Add(-circuit.RecordsGrace), end.Add(circuit.RecordsGrace), time.Time{})
	if err != nil {
		return 0, err
	}
	sums := map[string]int64{}
	for _, row := range circuit.Countable(rows, end.Add(2*circuit.RecordsGrace)) {
		if !row.Second.Before(minute) && !row.Second.After(end) {
			sums[row.Circuit] += int64(row.Count)
		}
	}
	byApp := map[string]*tablestore.Batch{}
	for id, n := range sums {
		app, function, _ := strings.Cut(id, "/")
		b := byApp[app]
		if b == nil {
			b = r.table.NewBatch(app)
			byApp[app] = b
		}
		row := &rateRow{Meta: tablestore.Meta{PartitionKey: app, RowKey: function + "|" + FailurePartition(minute)}, Function: function, Minute: minute, Count: n}
		if err := b.Upsert(row); err != nil {
			return 0, err
		}
		if b.Len() == tablestore.MaxBatchActions {
			if err := b.Submit(ctx); err != nil {
				return 0, fmt.Errorf("storage: roll up %s: %w", minute.Format(time.RFC3339), err)
			}
			byApp[app] = nil
		}
	}
	for _, b := range byApp {
		if b == nil {
			continue
		}
		if err := b.Submit(ctx); err != nil {
			return 0, fmt.Errorf("storage: roll up %s: %w", minute.Format(time.RFC3339), err)
		}
	}
	return len(sums), nil
}

// Since returns every circuit's minutes with failures from from on.
func (r *Rates) Since(ctx context.Context, from time.Time) ([]MinuteCount, error) {
	return r.query(ctx, tablestore.Ge("Minute", from.UTC().Truncate(time.Minute)))
}

// Of returns one circuit's minutes with failures from from on.
func (r *Rates) Of(ctx context.Context, appID, function string, from time.Time) ([]MinuteCount, error) {
	return r.query(ctx, tablestore.And(tablestore.PartitionIs(appID),
		tablestore.Ge("RowKey", function+"|"+FailurePartition(from)), tablestore.Lt("RowKey", function+"}")))
}

func (r *Rates) query(ctx context.Context, f tablestore.Filter) ([]MinuteCount, error) {
	var out []MinuteCount
	for row, err := range tablestore.Rows[rateRow](ctx, r.table, tablestore.Query{Filter: f}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			continue // a chart does without a row it cannot read
		}
		if err != nil {
			return nil, fmt.Errorf("storage: failure rates: %w", err)
		}
		out = append(out, MinuteCount{Circuit: row.PartitionKey + "/" + row.Function, Minute: row.Minute, Count: int(row.Count)})
	}
	return out, nil
}

// DeleteBefore removes rates of minutes before t.
func (r *Rates) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	n, err := deleteMatching(ctx, r.table, tablestore.Lt("Minute", t))
	if err != nil {
		return n, fmt.Errorf("storage: prune rates: %w", err)
	}
	return n, nil
}

// RollupRecent redoes the last two whole minutes before now, so rows that
// arrived late are counted; the roll-up loop runs it every 30 seconds.
func (r *Rates) RollupRecent(ctx context.Context, f *Failures, now time.Time) error {
	var errs []error
	for _, back := range []time.Duration{2 * time.Minute, time.Minute} {
		if _, err := r.Rollup(ctx, f, now.Add(-back)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Add adds n failures to a function's minute, for reports of functions
// that have no circuit: they are kept as a tally per minute, not as rows
// the evaluator reads each tick. It retries a lost race a few times.
func (r *Rates) Add(ctx context.Context, appID, function string, minute time.Time, n int) error {
	minute = minute.UTC().Truncate(time.Minute)
	key := function + "|" + FailurePartition(minute)
	for range 5 {
		var row rateRow
		err := r.table.Get(ctx, appID, key, &row)
		switch {
		case errors.Is(err, tablestore.ErrNotFound):
			row = rateRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: key}, Function: function, Minute: minute, Count: int64(n)}
			err = r.table.Insert(ctx, &row)
		case err == nil:
			row.Count += int64(n)
			err = r.table.Update(ctx, &row)
		}
		if errors.Is(err, tablestore.ErrConflict) || errors.Is(err, tablestore.ErrExists) {
			continue // another request added first: read its count again
		}
		if err != nil {
			return fmt.Errorf("storage: add to the failures of %s/%s: %w", appID, function, err)
		}
		return nil
	}
	return fmt.Errorf("storage: add to the failures of %s/%s: %w", appID, function, tablestore.ErrConflict)
}

// OfApp returns an app's minutes with failures from from on, every
// function's, circuit or not.
func (r *Rates) OfApp(ctx context.Context, appID string, from time.Time) ([]MinuteCount, error) {
	return r.query(ctx, tablestore.And(tablestore.PartitionIs(appID), tablestore.Ge("Minute", from.UTC().Truncate(time.Minute))))
}
