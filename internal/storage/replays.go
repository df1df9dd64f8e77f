package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Replays keeps where each Event Hubs function's checkpoints stood over
// time (replay.History) and each episode's replay (replay.Records), in
// the app's partition.
type Replays struct {
	table  *tablestore.Table
	faults *Faults
}

// bad lists a row that does not read, for the dashboard's list of rows
// written by others that Fusebox skipped.
func (r *Replays) bad(pk, rk, problem string) {
	r.faults.Add(Fault{Table: TableReplays, Key: pk + "/" + rk, Problem: problem, Seen: time.Now()})
}

type replayRow struct {
	tablestore.Meta // PartitionKey: app id; RowKey: h|function|unix ms (19 digits), or r|function|episode (19 digits)
	Kind            string
	Function        string
	At              time.Time
	Body            string // JSON: a replay.Sample's marks, or a replay.Record
	// Unsettled marks a record whose outcome is not known yet, for
	// replay.Service.Settle's query.
	Unsettled bool
}

// Row kinds, and how long each is kept.
const (
	replayHistory = "h"
	replayRecord  = "r"
	// ReplayHistoryRetention is Event Hubs' longest retention on the
	// standard tier: a position older than every event a hub keeps
	// places nothing. ReplayRecordRetention keeps episodes' replays as
	// long as the flips that name them are likely kept.
	ReplayHistoryRetention = 7 * 24 * time.Hour
	ReplayRecordRetention  = 90 * 24 * time.Hour
	// maxReplayBody bounds what one row's body may hold before it is
	// read: a table string holds 32K UTF-16 units.
	maxReplayBody = 32 << 10
)

func historyKey(function string, at time.Time) string {
	return fmt.Sprintf("%s|%s|%019d", replayHistory, function, at.UnixMilli())
}

func recordKey(function string, episode int64) string {
	return fmt.Sprintf("%s|%s|%019d", replayRecord, function, episode)
}

// Put keeps a sample of function's positions.
func (r *Replays) Put(ctx context.Context, appID, function string, s replay.Sample) error {
	body, err := json.Marshal(s.Marks)
	if err != nil {
		return err
	}
	if len(body) > maxReplayBody {
		return fmt.Errorf("storage: a checkpoint sample of %s/%s is %d bytes, more than a row holds", appID, function, len(body))
	}
	row := &replayRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: historyKey(function, s.At)}, Kind: replayHistory, Function: function, At: s.At, Body: string(body)}
	if err := r.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: checkpoint sample %s/%s: %w", appID, function, err)
	}
	return nil
}

func (r *Replays) samples(ctx context.Context, appID, function string, from, to time.Time, limit int) ([]replay.Sample, error) {
	f := tablestore.And(tablestore.PartitionIs(appID), tablestore.Ge("RowKey", historyKey(function, from)), tablestore.Le("RowKey", historyKey(function, to)))
	var out []replay.Sample
	for row, err := range tablestore.Rows[replayRow](ctx, r.table, tablestore.Query{Filter: f}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			r.bad(rowErr.PartitionKey, rowErr.RowKey, rowErr.Err.Error())
			continue // a bad row places nothing; the next sample does
		}
		if err != nil {
			return nil, fmt.Errorf("storage: checkpoint samples of %s/%s: %w", appID, function, err)
		}
		s, ok := sampleOf(row, function)
		if !ok {
			r.bad(row.PartitionKey, row.RowKey, "not a checkpoint sample: its body must be a JSON array of at most 128 partitions' positions")
			continue
		}
		out = append(out, s)
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

func sampleOf(row replayRow, function string) (replay.Sample, bool) {
	if row.Kind != replayHistory || !strings.HasPrefix(row.RowKey, replayHistory+"|"+function+"|") || len(row.Body) > maxReplayBody {
		return replay.Sample{}, false
	}
	s := replay.Sample{At: row.At}
	if json.Unmarshal([]byte(row.Body), &s.Marks) != nil || len(s.Marks) > replay.MaxPartitions {
		return replay.Sample{}, false
	}
	return s, true
}

// Before is the last sample at or before t (within replay.Lookback).
func (r *Replays) Before(ctx context.Context, appID, function string, t time.Time) (replay.Sample, bool, error) {
	ss, err := r.samples(ctx, appID, function, t.Add(-replay.Lookback), t, int(replay.Lookback/time.Second)+1)
	if err != nil || len(ss) == 0 {
		return replay.Sample{}, false, err
	}
	return ss[len(ss)-1], true, nil
}

// After is up to limit samples of [from, to], oldest first.
func (r *Replays) After(ctx context.Context, appID, function string, from, to time.Time, limit int) ([]replay.Sample, error) {
	return r.samples(ctx, appID, function, from, to, limit)
}

// Get reads an episode's replay record.
func (r *Replays) Get(ctx context.Context, appID, function string, episode int64) (replay.Record, error) {
	var row replayRow
	if err := r.table.Get(ctx, appID, recordKey(function, episode), &row); err != nil {
		return replay.Record{}, err
	}
	rec, err := recordOf(row)
	if err != nil || rec.Function != function || rec.Episode != episode {
		r.bad(appID, row.RowKey, "not an episode's replay record")
		return replay.Record{}, &tablestore.RowError{PartitionKey: appID, RowKey: row.RowKey, Err: errors.New("not an episode's replay record")}
	}
	return rec, nil
}

// recordOf reads a record row, checked against its key.
func recordOf(row replayRow) (replay.Record, error) {
	var rec replay.Record
	if row.Kind != replayRecord || len(row.Body) > maxReplayBody || json.Unmarshal([]byte(row.Body), &rec) != nil ||
		row.RowKey != recordKey(row.Function, rec.Episode) || len(rec.Partitions) > replay.MaxPartitions {
		return replay.Record{}, errors.New("not an episode's replay record")
	}
	rec.AppID, rec.Function, rec.Version = row.PartitionKey, row.Function, string(row.ETag)
	return rec, nil
}

// Save writes rec: a new one is inserted (ErrExists if another instance
// was first), a read one replaced on condition of its version.
func (r *Replays) Save(ctx context.Context, rec *replay.Record) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(body) > maxReplayBody {
		return fmt.Errorf("storage: the replay record of %s/%s is %d bytes, more than a row holds", rec.AppID, rec.Function, len(body))
	}
	row := &replayRow{Meta: tablestore.Meta{PartitionKey: rec.AppID, RowKey: recordKey(rec.Function, rec.Episode), ETag: tablestore.ETag(rec.Version)},
		Kind: replayRecord, Function: rec.Function, At: rec.FirstFailure, Body: string(body), Unsettled: rec.Unsettled()}
	if rec.Version == "" {
		err = r.table.Insert(ctx, row)
	} else {
		err = r.table.Update(ctx, row)
	}
	if err != nil {
		return err
	}
	rec.Version = string(row.ETag)
	return nil
}

// maxUnsettled bounds one app's unsettled records read in a pass.
const maxUnsettled = 100

// Unsettled are appID's records whose outcome is not known yet, at most
// maxUnsettled; rows that do not read are skipped.
func (r *Replays) Unsettled(ctx context.Context, appID string) ([]replay.Record, error) {
	f := tablestore.And(tablestore.PartitionIs(appID), tablestore.Eq("Kind", replayRecord), tablestore.Eq("Unsettled", true))
	var out []replay.Record
	for row, err := range tablestore.Rows[replayRow](ctx, r.table, tablestore.Query{Filter: f}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			r.bad(rowErr.PartitionKey, rowErr.RowKey, rowErr.Err.Error())
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: unsettled replays of %s: %w", appID, err)
		}
		rec, err := recordOf(row)
		if err != nil {
			r.bad(row.PartitionKey, row.RowKey, err.Error())
			continue
		}
		out = append(out, rec)
		if len(out) >= maxUnsettled {
			break
		}
	}
	return out, nil
}

// DeleteBefore removes samples older than history and records older
// than records.
func (r *Replays) DeleteBefore(ctx context.Context, history, records time.Time) (int, error) {
	n, err := deleteMatching(ctx, r.table, tablestore.And(tablestore.Eq("Kind", replayHistory), tablestore.Lt("At", history)))
	m, err2 := deleteMatching(ctx, r.table, tablestore.And(tablestore.Eq("Kind", replayRecord), tablestore.Lt("At", records)))
	return n + m, errors.Join(err, err2)
}
