package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Audit keeps entries partitioned by month, newest first inside each month:
// the row key is the time counted down from the far future, so the service's
// ascending key order lists the latest entry first.
type Audit struct{ table *tablestore.Table }

type auditRow struct {
	tablestore.Meta // PartitionKey: "2006-01"; RowKey: inverted nanoseconds + random suffix
	At              time.Time
	Actor           string
	Action          string
	Target          string
	Detail          string
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
	if err := a.table.Insert(ctx, row); err != nil {
		return fmt.Errorf("storage: append audit entry %q: %w", e.Action, err)
	}
	return nil
}

// Recent returns up to limit entries, newest first, looking back at most
// twelve months from now.
func (a *Audit) Recent(ctx context.Context, now time.Time, limit int) ([]audit.Entry, error) {
	var out []audit.Entry
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	for range 12 {
		q := tablestore.Query{Filter: tablestore.PartitionIs(month.Format("2006-01")), Top: int32(min(limit, 1000))}
		for r, err := range tablestore.Rows[auditRow](ctx, a.table, q) {
			if err != nil {
				return nil, fmt.Errorf("storage: recent audit entries: %w", err)
			}
			out = append(out, audit.Entry{At: r.At, Actor: r.Actor, Action: r.Action, Target: r.Target, Detail: r.Detail})
			if len(out) == limit {
				return out, nil
			}
		}
		month = month.AddDate(0, -1, 0)
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
			if err != nil {
				return nil, fmt.Errorf("storage: audit entries about %s: %w", target, err)
			}
			out = append(out, audit.Entry{At: r.At, Actor: r.Actor, Action: r.Action, Target: r.Target, Detail: r.Detail})
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
