package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Maintenance windows live in the Jobs table, in their own partition: they
// are few, and the scanner reads them with the jobs.
const windowsPartition = "window"

// ErrNoWindow is a maintenance window that does not exist.
var ErrNoWindow = jobs.ErrNoWindow

type windowRow struct {
	tablestore.Meta // PartitionKey: "window"; RowKey: window id
	AppID           string
	From            time.Time
	Until           time.Time
	Reason          string
	CreatedBy       string
	Recurs          string // optional: cron or NCRONTAB of the openings
	TimeZone        string // of Recurs
	DurationSeconds int32  // of each opening
}

// Windows returns every maintenance window, latest start first.
func (j *Jobs) Windows(ctx context.Context) ([]jobs.Window, error) {
	out, faults, err := readRows[windowRow](ctx, j.table, tablestore.Query{Filter: tablestore.PartitionIs(windowsPartition)}, TableJobs+" (maintenance windows)",
		func(r windowRow) (jobs.Window, error) {
			if r.From.IsZero() || r.Until.IsZero() {
				return jobs.Window{}, errors.New("from and until must both be date-times")
			}
			w := jobs.Window{ID: r.RowKey, AppID: r.AppID, From: r.From, Until: r.Until, Reason: r.Reason, CreatedBy: r.CreatedBy,
				Recurs: r.Recurs, TimeZone: r.TimeZone, Duration: time.Duration(r.DurationSeconds) * time.Second}
			if w.Recurring() {
				if errs := w.Validate(); errs["recurs"] != "" || errs["duration"] != "" {
					return jobs.Window{}, fmt.Errorf("the recurrence does not read: %s%s", errs["recurs"], errs["duration"])
				}
			}
			return w, nil
		})
	if err != nil {
		return nil, fmt.Errorf("storage: list maintenance windows: %w", err)
	}
	j.faults.Replace(TableJobs+" (maintenance windows)", faults)
	slices.SortFunc(out, func(a, b jobs.Window) int { return b.From.Compare(a.From) })
	return out, nil
}

// PutWindow creates or replaces a maintenance window.
func (j *Jobs) PutWindow(ctx context.Context, w jobs.Window) error {
	row := &windowRow{Meta: tablestore.Meta{PartitionKey: windowsPartition, RowKey: w.ID},
		AppID: w.AppID, From: w.From, Until: w.Until, Reason: w.Reason, CreatedBy: w.CreatedBy,
		Recurs: w.Recurs, TimeZone: w.TimeZone, DurationSeconds: int32(w.Duration / time.Second)}
	if err := j.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: put maintenance window %s: %w", w.ID, err)
	}
	return nil
}

// EndWindow ends a window at t, if it had not ended already, keeping it in
// the history.
func (j *Jobs) EndWindow(ctx context.Context, id string, t time.Time) (jobs.Window, error) {
	for range 3 {
		var row windowRow
		if err := j.table.Get(ctx, windowsPartition, id, &row); err != nil {
			if errors.Is(err, tablestore.ErrNotFound) {
				return jobs.Window{}, fmt.Errorf("%w: %s", ErrNoWindow, id)
			}
			return jobs.Window{}, fmt.Errorf("storage: maintenance window %s: %w", id, err)
		}
		if row.Until.After(t) {
			row.Until = t
			if row.From.After(t) {
				row.From = t // ending one that has not begun cancels it
			}
			err := j.table.Update(ctx, &row)
			if errors.Is(err, tablestore.ErrConflict) {
				continue
			}
			if err != nil {
				return jobs.Window{}, fmt.Errorf("storage: maintenance window %s: %w", id, err)
			}
		}
		return jobs.Window{ID: row.RowKey, AppID: row.AppID, From: row.From, Until: row.Until, Reason: row.Reason, CreatedBy: row.CreatedBy}, nil
	}
	return jobs.Window{}, fmt.Errorf("storage: maintenance window %s: %w", id, tablestore.ErrConflict)
}
