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
	tablestore.Meta // PartitionKey: app id; RowKey: function|unix minute (19 digits)
	Function        string
	At              time.Time
	Concurrency     int32
}

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
