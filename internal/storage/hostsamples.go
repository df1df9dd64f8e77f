package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// HostSamples keeps what the Functions hosts learned, sampled over time:
// each function's learned concurrency, per app partition, so the circuit
// page can draw its day.
type HostSamples struct{ table *tablestore.Table }

type hostSampleRow struct {
	tablestore.Meta // PartitionKey: app id; RowKey: function|unix minute (19 digits), or ~w|function|minute for waiting counts
	Function        string
	At              time.Time
	Concurrency     int32
	Waiting         int64
}

// waitingKey keys a waiting count apart from every function's learned
// concurrency: a function's name begins with a letter, never "~".
func waitingKey(function string, at time.Time) string {
	return "~w|" + sampleKey(function, at)
}

// WaitingSample is the events waiting behind a function's checkpoints at
// one time.
type WaitingSample = hostinsight.WaitingSample

// PutWaiting records a function's waiting count (one per minute).
func (h *HostSamples) PutWaiting(ctx context.Context, appID, function string, at time.Time, waiting int64) error {
	row := &hostSampleRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: waitingKey(function, at)}, Function: function, At: at, Waiting: waiting}
	if err := h.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: waiting sample %s/%s: %w", appID, function, err)
	}
	return nil
}

// Waiting returns a function's waiting counts of [from, to], oldest
// first, at most maxWaitingSamples; rows that do not read are skipped.
func (h *HostSamples) Waiting(ctx context.Context, appID, function string, from, to time.Time) ([]WaitingSample, error) {
	f := tablestore.And(tablestore.PartitionIs(appID), tablestore.Ge("RowKey", waitingKey(function, from)), tablestore.Le("RowKey", waitingKey(function, to)))
	var out []WaitingSample
	for row, err := range tablestore.Rows[hostSampleRow](ctx, h.table, tablestore.Query{Filter: f}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: waiting samples of %s/%s: %w", appID, function, err)
		}
		if row.Waiting < 0 || !strings.HasPrefix(row.RowKey, "~w|"+function+"|") {
			continue
		}
		out = append(out, WaitingSample{At: row.At, Waiting: row.Waiting})
		if len(out) >= maxWaitingSamples {
			break
		}
	}
	return out, nil
}

// maxWaitingSamples bounds one read: two days of minutes.
const maxWaitingSamples = 2 * 24 * 60

func sampleKey(function string, at time.Time) string {
	return fmt.Sprintf("%s|%019d", function, at.Unix()/60)
}

// ConcurrencySample is one function's learned concurrency at a time.
type ConcurrencySample = hostinsight.ConcurrencySample

// PutConcurrency records a sample (one per function per minute).
func (h *HostSamples) PutConcurrency(ctx context.Context, appID, function string, at time.Time, concurrency int) error {
	row := &hostSampleRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: sampleKey(function, at)}, Function: function, At: at, Concurrency: int32(concurrency)}
	if err := h.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: host sample %s/%s: %w", appID, function, err)
	}
	return nil
}

// Concurrency returns a function's samples since from, oldest first; rows
// that do not read are skipped.
func (h *HostSamples) Concurrency(ctx context.Context, appID, function string, from time.Time) ([]ConcurrencySample, error) {
	f := tablestore.And(tablestore.PartitionIs(appID), tablestore.Ge("RowKey", sampleKey(function, from)), tablestore.Lt("RowKey", function+"|~"))
	var out []ConcurrencySample
	for row, err := range tablestore.Rows[hostSampleRow](ctx, h.table, tablestore.Query{Filter: f}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: host samples of %s/%s: %w", appID, function, err)
		}
		if row.Concurrency < 0 || !strings.HasPrefix(row.RowKey, function+"|") {
			continue
		}
		out = append(out, ConcurrencySample{At: row.At, Concurrency: int(row.Concurrency)})
	}
	return out, nil
}

// HostSampleRetention is how long samples are kept.
const HostSampleRetention = 2 * 24 * time.Hour

// DeleteBefore removes samples older than t.
func (h *HostSamples) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	return deleteMatching(ctx, h.table, tablestore.Lt("At", t))
}
