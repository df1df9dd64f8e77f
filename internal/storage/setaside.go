package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// SetAside keeps what Fusebox last saw of each app's set-aside queues
// (setaside.Watch: count, oldest, episode, the hour's counts), so pages
// and notices read one table instead of every app's queue storage.
type SetAside struct {
	table  *tablestore.Table
	faults *Faults
}

// readProblemKey is the row of an app's partition that says why its queues
// could not be read; "!" is no queue name, so it never meets one.
const readProblemKey = "!read"

type setAsideRow struct {
	tablestore.Meta // PartitionKey: app id; RowKey: queue name
	Kind            string
	Source          string
	Function        string
	Count           int32
	Oldest          time.Time
	Expires         time.Time // when the oldest message expires; zero: never, or empty
	ReadAt          time.Time
	Episode         int64
	Since           time.Time
	Grew            bool
	ExpiryTold      bool
	Samples         string // unix:count,… oldest first
	Problem         string // the read-problem row only
	// A run's row ("!run-<queue>") only:
	To        string
	Total     int32
	Moved     int32
	Doubled   int32
	StartedAt time.Time
	EndedAt   time.Time
	By        string
	Reason    string
	Error     string
}

// runPrefix starts the row key of a queue's latest send-back run.
const runPrefix = "!run-"

func (r setAsideRow) read() (setaside.Kept, error) {
	q, ok := setaside.Classify(r.RowKey, nil)
	switch {
	case !setaside.ValidQueueName(r.RowKey):
		return setaside.Kept{}, fmt.Errorf("%q is not a queue name", r.RowKey)
	case r.Kind == string(setaside.Parking):
		q = setaside.Queue{Name: r.RowKey, Kind: setaside.Parking}
	case !ok || string(q.Kind) != r.Kind:
		return setaside.Kept{}, fmt.Errorf("kind %q does not match the queue's name", r.Kind)
	case r.Count < 0 || r.Episode < 0:
		return setaside.Kept{}, errors.New("the count and the episode must not be negative")
	}
	q.Function = r.Function
	samples, err := readSamples(r.Samples)
	if err != nil {
		return setaside.Kept{}, err
	}
	return setaside.Kept{Queue: q, Watch: setaside.Watch{Count: int(r.Count), Oldest: r.Oldest, Expires: r.Expires, ReadAt: r.ReadAt, Episode: r.Episode,
		Since: r.Since, Grew: r.Grew, ExpiryTold: r.ExpiryTold, Samples: samples}}, nil
}

func readSamples(s string) ([]setaside.Sample, error) {
	var out []setaside.Sample
	for _, f := range commaList(s) {
		at, n, ok := strings.Cut(f, ":")
		sec, err1 := strconv.ParseInt(at, 10, 64)
		count, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || sec < 0 || count < 0 {
			return nil, fmt.Errorf("samples: %q is not unix:count", f)
		}
		out = append(out, setaside.Sample{At: time.Unix(sec, 0), Count: count})
	}
	return out, nil
}

// Put records what a look at the app's queue q found.
func (s *SetAside) Put(ctx context.Context, appID string, q setaside.Queue, w setaside.Watch) error {
	var b strings.Builder
	for i, x := range w.Samples {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", x.At.Unix(), x.Count)
	}
	row := &setAsideRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: q.Name}, Kind: string(q.Kind), Source: q.Source, Function: q.Function,
		Count: int32(min(w.Count, 1<<31-1)), Oldest: w.Oldest, Expires: w.Expires, ReadAt: w.ReadAt, Episode: w.Episode, Since: w.Since, Grew: w.Grew, ExpiryTold: w.ExpiryTold, Samples: b.String()}
	if err := s.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: set-aside %s/%s: %w", appID, q.Name, err)
	}
	return nil
}

// PutProblem records why the app's queues could not be read ("" clears it).
func (s *SetAside) PutProblem(ctx context.Context, appID, problem string, at time.Time) error {
	row := &setAsideRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: readProblemKey}, Problem: truncate(problem, 500), ReadAt: at}
	if err := s.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: set-aside %s: %w", appID, err)
	}
	return nil
}

// PutRun records a send-back run's progress.
func (s *SetAside) PutRun(ctx context.Context, appID string, r setaside.Run) error {
	row := &setAsideRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: runPrefix + r.Queue}, To: r.To, Total: int32(r.Total), Moved: int32(r.Moved),
		Doubled: int32(r.Doubled), StartedAt: r.StartedAt, ReadAt: r.UpdatedAt, EndedAt: r.EndedAt, By: r.By, Reason: truncate(r.Reason, 500), Error: truncate(r.Error, 500)}
	if err := s.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: send-back run %s/%s: %w", appID, r.Queue, err)
	}
	return nil
}

// OfApp returns what was last seen of one app's set-aside queues.
func (s *SetAside) OfApp(ctx context.Context, appID string) (setaside.AppSetAside, error) {
	all, err := s.read(ctx, tablestore.Query{Filter: tablestore.PartitionIs(appID)}, false)
	if err != nil {
		return setaside.AppSetAside{AppID: appID}, err
	}
	if a, ok := all[appID]; ok {
		return a, nil
	}
	return setaside.AppSetAside{AppID: appID}, nil
}

// All returns what was last seen of every app's set-aside queues, by app.
func (s *SetAside) All(ctx context.Context) (map[string]setaside.AppSetAside, error) {
	return s.read(ctx, tablestore.Query{}, true)
}

func (s *SetAside) read(ctx context.Context, q tablestore.Query, whole bool) (map[string]setaside.AppSetAside, error) {
	out := map[string]setaside.AppSetAside{}
	var faults []Fault
	now := time.Now()
	for row, err := range tablestore.Rows[setAsideRow](ctx, s.table, q) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			faults = append(faults, Fault{Table: TableSetAside, Key: rowErr.PartitionKey + "/" + rowErr.RowKey, Problem: rowErr.Err.Error(), Seen: now})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: set-aside: %w", err)
		}
		a := out[row.PartitionKey]
		a.AppID = row.PartitionKey
		if row.RowKey == readProblemKey {
			a.Problem, a.ProblemAt = row.Problem, row.ReadAt
			out[row.PartitionKey] = a
			continue
		}
		if q, ok := strings.CutPrefix(row.RowKey, runPrefix); ok {
			if !setaside.ValidQueueName(q) || row.Total < 0 || row.Moved < 0 || row.Doubled < 0 {
				faults = append(faults, Fault{Table: TableSetAside, Key: row.PartitionKey + "/" + row.RowKey,
					Problem: "a send-back run's row needs a queue name after \"" + runPrefix + "\" and counts that are not negative", Seen: now})
				continue
			}
			if a.Runs == nil {
				a.Runs = map[string]setaside.Run{}
			}
			a.Runs[q] = setaside.Run{Queue: q, To: row.To, Total: int(row.Total), Moved: int(row.Moved), Doubled: int(row.Doubled), StartedAt: row.StartedAt,
				UpdatedAt: row.ReadAt, EndedAt: row.EndedAt, By: row.By, Reason: row.Reason, Error: row.Error}
			out[row.PartitionKey] = a
			continue
		}
		k, err := row.read()
		if err != nil {
			faults = append(faults, Fault{Table: TableSetAside, Key: row.PartitionKey + "/" + row.RowKey, Problem: err.Error(), Seen: now})
			continue
		}
		a.Queues = append(a.Queues, k)
		out[row.PartitionKey] = a
	}
	if whole {
		s.faults.Replace(TableSetAside, faults)
	} else {
		s.faults.Add(faults...)
	}
	return out, nil
}
