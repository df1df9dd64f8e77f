package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Runs keeps each job's run history in the job's partition, newest first:
// the RowKey counts down from the far future.
type Runs struct {
	table  *tablestore.Table
	faults *Faults
}

// MaxLog is how much of a ping's body is kept as the run's log excerpt.
const MaxLog = jobs.MaxLog

type runRow struct {
	tablestore.Meta           // PartitionKey: job id; RowKey: (MaxInt64 - start nanos, 19 digits)-runID
	RunID           string    // the ping's rid, or generated
	Start           time.Time // when it started (or, for a lone success ping, finished)
	End             time.Time // zero while it runs
	State           string    // running, ok, failed, log
	ExitStatus      int32     // -1 when not given
	Log1            []byte    // the first 64 KiB of the log excerpt
	Log2            []byte    // the rest, up to MaxLog
}

// StoredRun is a run as the dashboard shows it.
type StoredRun = jobs.StoredRun

func runKey(start time.Time, id string) string {
	return fmt.Sprintf("%019d-%s", math.MaxInt64-start.UnixNano(), id)
}

func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func setLog(r *runRow, log []byte) {
	if len(log) > MaxLog {
		log = log[:MaxLog]
	}
	r.Log1, r.Log2 = nil, nil
	if len(log) > 0 {
		r.Log1 = log[:min(len(log), 64<<10)]
	}
	if len(log) > 64<<10 {
		r.Log2 = log[64<<10:]
	}
}

func (r runRow) stored() StoredRun {
	return StoredRun{Run: jobs.Run{ID: r.RunID, Start: r.Start, End: r.End, Failed: r.State == "failed"},
		State: r.State, ExitStatus: int(r.ExitStatus), Log: string(r.Log1) + string(r.Log2)}
}

// Add stores a new entry; one with the same start and run id is kept.
func (rs *Runs) Add(ctx context.Context, jobID string, e jobs.Entry) error {
	row := &runRow{Meta: tablestore.Meta{PartitionKey: jobID, RowKey: runKey(e.Start, e.RunID)}}
	row.setEntry(e)
	if err := rs.table.Insert(ctx, row); err != nil && !errors.Is(err, tablestore.ErrExists) {
		return fmt.Errorf("storage: record run of %s: %w", jobID, err)
	}
	return nil
}

// Finish replaces the run Running found on condition it is still at
// e.Version, else jobs.ErrConflict.
func (rs *Runs) Finish(ctx context.Context, jobID string, e jobs.Entry) error {
	if e.Key == "" {
		return fmt.Errorf("storage: finish run of %s: the entry was not found by Running", jobID)
	}
	row := &runRow{Meta: tablestore.Meta{PartitionKey: jobID, RowKey: e.Key, ETag: tablestore.ETag(e.Version)}}
	row.setEntry(e)
	err := rs.table.Update(ctx, row)
	if errors.Is(err, tablestore.ErrConflict) {
		return fmt.Errorf("storage: finish run of %s: %w", jobID, jobs.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("storage: finish run of %s: %w", jobID, err)
	}
	return nil
}

func (r *runRow) setEntry(e jobs.Entry) {
	r.RunID, r.Start, r.End, r.State, r.ExitStatus = e.RunID, e.Start, e.End, e.State, int32(e.ExitStatus)
	setLog(r, e.Log)
}

// Running finds the run a closing ping closes: the one with runID, or the
// latest running one that started in the day before at.
func (rs *Runs) Running(ctx context.Context, jobID, runID string, at time.Time) (jobs.Entry, bool, error) {
	f := tablestore.And(tablestore.PartitionIs(jobID), tablestore.Ge("RowKey", fmt.Sprintf("%019d", math.MaxInt64-at.Add(time.Minute).UnixNano())),
		tablestore.Lt("RowKey", fmt.Sprintf("%019d", math.MaxInt64-at.Add(-24*time.Hour).UnixNano())))
	if runID != "" {
		f = tablestore.And(f, tablestore.Eq("RunID", runID))
	} else {
		f = tablestore.And(f, tablestore.Eq("State", jobs.StateRunning))
	}
	rows, bad, _, err := tablestore.PageSkipping[runRow](ctx, rs.table, tablestore.Query{Filter: f, Top: 1}, tablestore.Continuation{})
	rs.report(bad)
	if err != nil {
		return jobs.Entry{}, false, fmt.Errorf("storage: runs of %s: %w", jobID, err)
	}
	if len(rows) == 0 || rows[0].State != jobs.StateRunning {
		return jobs.Entry{}, false, nil
	}
	r := rows[0]
	return jobs.Entry{RunID: r.RunID, Start: r.Start, End: r.End, State: r.State, ExitStatus: int(r.ExitStatus),
		Log: append(append([]byte(nil), r.Log1...), r.Log2...), Key: r.RowKey, Version: string(r.ETag)}, true, nil
}

// NewRunID makes a run id for pings that give none.
func NewRunID() string { return newRunID() }

// Between returns the newest limit runs (not log entries) that started
// in [from, to), oldest first, for gap detection; more says older ones
// were left unread. A key holder who floods a job with runs costs a read
// no more than limit rows.
func (rs *Runs) Between(ctx context.Context, jobID string, from, to time.Time, limit int) (runs []jobs.Run, more bool, err error) {
	f := tablestore.And(tablestore.PartitionIs(jobID),
		tablestore.Gt("RowKey", fmt.Sprintf("%019d~", math.MaxInt64-to.UnixNano())),
		tablestore.Le("RowKey", fmt.Sprintf("%019d~", math.MaxInt64-from.UnixNano())),
		tablestore.Ne("State", "log"))
	var out []jobs.Run
	q := tablestore.Query{Filter: f, Select: []string{"PartitionKey", "RowKey", "RunID", "Start", "End", "State"}}
	if limit < 1000 {
		q.Top = int32(limit + 1)
	}
	for r, err := range tablestore.Rows[runRow](ctx, rs.table, q) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			rs.report([]*tablestore.RowError{rowErr})
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("storage: runs of %s: %w", jobID, err)
		}
		if len(out) == limit {
			more = true
			break
		}
		out = append(out, r.stored().Run)
	}
	slices.Reverse(out)
	return out, more, nil
}

// Recent returns a page of a job's runs and log entries, newest first.
func (rs *Runs) Recent(ctx context.Context, jobID string, limit int, from jobs.RunCursor) ([]StoredRun, jobs.RunCursor, error) {
	rows, bad, cont, err := tablestore.PageSkipping[runRow](ctx, rs.table, tablestore.Query{Filter: tablestore.PartitionIs(jobID), Top: int32(limit)},
		tablestore.Continuation(from))
	rs.report(bad)
	next := jobs.RunCursor(cont)
	if err != nil {
		return nil, next, fmt.Errorf("storage: runs of %s: %w", jobID, err)
	}
	out := make([]StoredRun, len(rows))
	for i, r := range rows {
		out[i] = r.stored()
	}
	return out, next, nil
}

// Import writes finished runs in batches (seeding, imports); existing runs
// with the same start and id are replaced.
func (rs *Runs) Import(ctx context.Context, jobID string, runs []jobs.Run) error {
	for start := 0; start < len(runs); start += tablestore.MaxBatchActions {
		b := rs.table.NewBatch(jobID)
		for _, r := range runs[start:min(start+tablestore.MaxBatchActions, len(runs))] {
			id := r.ID
			if id == "" {
				id = newRunID()
			}
			state := "ok"
			if r.Failed {
				state = "failed"
			}
			if err := b.Upsert(&runRow{Meta: tablestore.Meta{PartitionKey: jobID, RowKey: runKey(r.Start, id)}, RunID: id, Start: r.Start, End: r.End, State: state, ExitStatus: -1}); err != nil {
				return err
			}
		}
		if err := b.Submit(ctx); err != nil {
			return fmt.Errorf("storage: import runs of %s: %w", jobID, err)
		}
	}
	return nil
}

// DeleteBefore removes runs that started before t, and returns how many.
func (rs *Runs) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	n, err := deleteMatching(ctx, rs.table, tablestore.Lt("Start", t))
	if err != nil {
		return n, fmt.Errorf("storage: prune runs: %w", err)
	}
	return n, nil
}

// report lists runs that could not be read among the faults.
func (rs *Runs) report(bad []*tablestore.RowError) {
	for _, e := range bad {
		rs.faults.Add(Fault{Table: TableRuns, Key: e.PartitionKey + "/" + e.RowKey, Problem: e.Err.Error(), Seen: time.Now()})
	}
}
