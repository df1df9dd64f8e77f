package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/teams"
)

// Audit keeps entries partitioned by month, newest first inside each month:
// the row key is the time counted down from the far future, so the service's
// ascending key order lists the latest entry first.
type Audit struct {
	table  *tablestore.Table
	faults *Faults
	// owner finds the team of what an entry is about when it is
	// written; nil: none recorded.
	owner func(ctx context.Context, e audit.Entry) (string, error)

	mu        sync.Mutex
	past      map[pastKey]pastMonth // Recent's reads of months before now's
	pastBytes int                   // their entries' texts
}

// A month before the current one gains no entry (each is written at its
// own time), so Recent keeps what it read of one for pastFresh: an
// overview with few entries this month read up to eleven earlier months
// one after the other on every view. Retention's deletions show within it.
type pastKey struct {
	month string
	limit int
}

type pastMonth struct {
	entries []audit.Entry
	bytes   int
	readAt  time.Time // this machine's clock
}

// The months kept are bounded in entries and in bytes (rows another
// program wrote may be large): past either, they are all dropped.
const (
	pastFresh    = 5 * time.Minute
	maxPast      = 64 // months × limits
	maxPastBytes = 4 << 20
)

type auditRow struct {
	tablestore.Meta // PartitionKey: "2006-01"; RowKey: inverted nanoseconds + random suffix
	At              time.Time
	Actor           string
	Action          string
	Target          string
	Detail          string
	Team            string // the subject's team when written
	Owned           bool   // Team was recorded (rows before it was are not)
}

func auditKeys(at time.Time) (string, string) {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	inverted := math.MaxInt64 - at.UnixNano()
	return at.UTC().Format("2006-01"), fmt.Sprintf("%019d-%s", inverted, hex.EncodeToString(suffix))
}

// Append records an entry.
func (a *Audit) Append(ctx context.Context, e audit.Entry) error {
	pk, rk := auditKeys(e.At)
	row := &auditRow{Meta: tablestore.Meta{PartitionKey: pk, RowKey: rk}, At: e.At.UTC(), Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: e.Detail}
	if a.owner != nil && !e.Owned {
		team, err := a.owner(ctx, e)
		if err != nil {
			return fmt.Errorf("storage: append audit entry %q: its team: %w", e.Action, err)
		}
		row.Team, row.Owned = team, true
	} else if e.Owned {
		row.Team, row.Owned = e.Team, true
	}
	if err := a.table.Insert(ctx, row); err != nil {
		return fmt.Errorf("storage: append audit entry %q: %w", e.Action, err)
	}
	return nil
}

// skipped says err is a row another program wrote that does not read: it
// is listed as a fault and left out, and the pages that show the audit
// (the overview among them) still render.
func (a *Audit) skipped(err error) bool {
	var rowErr *tablestore.RowError
	if !errors.As(err, &rowErr) {
		return false
	}
	a.faults.Add(Fault{Table: TableAudit, Key: rowErr.PartitionKey + "/" + rowErr.RowKey, Problem: rowErr.Err.Error(), Seen: time.Now()})
	return true
}

// Recent returns up to limit entries, newest first, looking back at most
// twelve months from now.
func (a *Audit) Recent(ctx context.Context, now time.Time, limit int) ([]audit.Entry, error) {
	var out []audit.Entry
	now = now.UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		entries, err := a.month(ctx, month.Format("2006-01"), limit, i > 0)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, e)
			if len(out) == limit {
				return out, nil
			}
		}
		month = month.AddDate(0, -1, 0)
	}
	return out, nil
}

// month reads a month's first limit entries, newest first; a past month's
// from what was read of it within pastFresh.
func (a *Audit) month(ctx context.Context, partition string, limit int, past bool) ([]audit.Entry, error) {
	key := pastKey{partition, limit}
	if past {
		a.mu.Lock()
		p, ok := a.past[key]
		a.mu.Unlock()
		if ok && time.Since(p.readAt) < pastFresh {
			return p.entries, nil
		}
	}
	readAt := time.Now()
	var out []audit.Entry
	q := tablestore.Query{Filter: tablestore.PartitionIs(partition), Top: int32(min(limit, 1000))}
	for r, err := range tablestore.Rows[auditRow](ctx, a.table, q) {
		if a.skipped(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: recent audit entries: %w", err)
		}
		out = append(out, audit.Entry{At: r.At, Actor: r.Actor, Action: r.Action, Target: r.Target, Detail: r.Detail, Team: validTeam(r.Team), Owned: r.Owned})
		if len(out) == limit {
			break
		}
	}
	if past {
		size := 0
		for _, e := range out {
			size += len(e.Actor) + len(e.Action) + len(e.Target) + len(e.Detail) + 128
		}
		a.mu.Lock()
		if old, ok := a.past[key]; ok {
			delete(a.past, key)
			a.pastBytes -= old.bytes
		}
		if a.past == nil || len(a.past) >= maxPast || a.pastBytes+size > maxPastBytes {
			a.past, a.pastBytes = map[pastKey]pastMonth{}, 0
		}
		if size <= maxPastBytes {
			a.past[key] = pastMonth{entries: slices.Clip(out), bytes: size, readAt: readAt}
			a.pastBytes += size
		}
		a.mu.Unlock()
	}
	return out, nil
}

// About returns up to limit entries about target made from from to to,
// oldest first.
func (a *Audit) About(ctx context.Context, target string, from, to time.Time, limit int) ([]audit.Entry, error) {
	var out []audit.Entry
	month := time.Date(to.Year(), to.Month(), 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 13 && !month.Before(time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)); i++ {
		q := tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs(month.Format("2006-01")), tablestore.Eq("Target", target),
			tablestore.Ge("At", from.UTC()), tablestore.Le("At", to.UTC()))}
		for r, err := range tablestore.Rows[auditRow](ctx, a.table, q) {
			if a.skipped(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("storage: audit entries about %s: %w", target, err)
			}
			out = append(out, audit.Entry{At: r.At, Actor: r.Actor, Action: r.Action, Target: r.Target, Detail: r.Detail, Team: validTeam(r.Team), Owned: r.Owned})
			if len(out) == limit {
				break
			}
		}
		if len(out) == limit {
			break
		}
		month = month.AddDate(0, -1, 0)
	}
	slices.SortStableFunc(out, func(a, b audit.Entry) int { return a.At.Compare(b.At) })
	return out, nil
}

// validTeam is a row's team, or none when it names no team (written by
// hand): the entry is then admins' and roles held on every app's.
func validTeam(s string) string {
	if !teams.ValidName(s) {
		return ""
	}
	return s
}

// auditOwner finds the team of what an entry is about, by what its
// target names: a job by its id, a channel, token or downstream by kind,
// an app or circuit by its app; Fusebox's own (teams, sign-ins, its
// loops' jobs) and what is gone have none.
func (s *Store) auditOwner(ctx context.Context, e audit.Entry) (string, error) {
	gone := func(err error) bool {
		return errors.Is(err, circuit.ErrNotFound) || errors.Is(err, jobs.ErrNoJob) || errors.Is(err, alerts.ErrNoChannel) || errors.Is(err, downstream.ErrNotFound)
	}
	appTeam := func(id string) (string, error) {
		a, err := s.Apps.Get(ctx, id)
		if gone(err) {
			return "", nil
		}
		return a.Team, err
	}
	if e.Job != "" {
		if jobs.InternalID(e.Job) {
			return "", nil
		}
		j, err := s.Jobs.Get(ctx, e.Job)
		switch {
		case gone(err):
			return "", nil
		case err != nil:
			return "", err
		case j.AppID != "":
			return appTeam(j.AppID)
		}
		return j.Team, nil
	}
	kind, id, _ := strings.Cut(e.Target, ":")
	switch kind {
	case "team":
		return "", nil
	case "channel":
		ch, err := s.Channels.Get(ctx, id)
		if gone(err) {
			return "", nil
		}
		return ch.Team, err
	case "downstream":
		d, err := s.Downstreams.Get(ctx, id)
		if gone(err) {
			return "", nil
		}
		return d.Team, err
	case "token":
		ts, err := s.Tokens.List(ctx)
		if err != nil {
			return "", err
		}
		for _, t := range ts {
			if t.ID == id {
				return t.Team, nil
			}
		}
		return "", nil
	}
	app, _, _ := strings.Cut(e.Target, "/")
	if !circuit.ValidAppID(app) {
		return "", nil
	}
	return appTeam(app)
}
