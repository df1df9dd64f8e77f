package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Status keeps what background loops report about themselves, for the
// dashboard, which may run on another instance than the loop.
type Status struct{ table *tablestore.Table }

type evaluatorRow struct {
	tablestore.Meta // PartitionKey: "status"; RowKey: "evaluator"
	Leader          string
	LastTickAt      time.Time
	TickMillis      int64
	Rejected        int64
	LastRejected    string
	RejectedAt      time.Time
	Tally           string // JSON of circuit.Tally, for metrics
}

// PutEvaluator records the evaluator's status.
func (s *Status) PutEvaluator(ctx context.Context, st circuit.Status) error {
	tally, err := json.Marshal(st.Tally)
	if err != nil {
		return fmt.Errorf("storage: evaluator status: %w", err)
	}
	row := &evaluatorRow{Meta: tablestore.Meta{PartitionKey: "status", RowKey: "evaluator"}, Leader: st.Leader, LastTickAt: st.LastTickAt,
		TickMillis: st.TickDuration.Milliseconds(), Rejected: st.Rejected, LastRejected: st.LastRejected, RejectedAt: st.RejectedAt,
		Tally: string(tally)}
	if err := s.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: evaluator status: %w", err)
	}
	return nil
}

// Evaluator reads the evaluator's status; the zero Status when it never ran.
func (s *Status) Evaluator(ctx context.Context) (circuit.Status, error) {
	var row evaluatorRow
	err := s.table.Get(ctx, "status", "evaluator", &row)
	if errors.Is(err, tablestore.ErrNotFound) {
		return circuit.Status{}, nil
	}
	if err != nil {
		return circuit.Status{}, fmt.Errorf("storage: evaluator status: %w", err)
	}
	st := circuit.Status{Leader: row.Leader, LastTickAt: row.LastTickAt, TickDuration: time.Duration(row.TickMillis) * time.Millisecond,
		Rejected: row.Rejected, LastRejected: row.LastRejected, RejectedAt: row.RejectedAt}
	// A Tally that does not read (a hand-edited row) costs the metrics'
	// totals, never the pages or the evaluator: it starts again from zero.
	if row.Tally != "" && json.Unmarshal([]byte(row.Tally), &st.Tally) != nil {
		st.Tally = circuit.Tally{}
	}
	return st, nil
}

type scannerRow struct {
	tablestore.Meta        // PartitionKey: "status"; RowKey: "scanner"
	Tally           string // JSON of jobs.Tally
}

// PutScanner records the job scanner's tally, for metrics.
func (s *Status) PutScanner(ctx context.Context, t jobs.Tally) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("storage: scanner status: %w", err)
	}
	if err := s.table.Upsert(ctx, &scannerRow{Meta: tablestore.Meta{PartitionKey: "status", RowKey: "scanner"}, Tally: string(b)}); err != nil {
		return fmt.Errorf("storage: scanner status: %w", err)
	}
	return nil
}

// Scanner reads the job scanner's tally; the zero Tally when it never ran.
func (s *Status) Scanner(ctx context.Context) (jobs.Tally, error) {
	var row scannerRow
	err := s.table.Get(ctx, "status", "scanner", &row)
	if errors.Is(err, tablestore.ErrNotFound) {
		return jobs.Tally{}, nil
	}
	if err != nil {
		return jobs.Tally{}, fmt.Errorf("storage: scanner status: %w", err)
	}
	var t jobs.Tally
	if json.Unmarshal([]byte(row.Tally), &t) != nil {
		return jobs.Tally{}, nil // rewritten on the scanner's next pass
	}
	return t, nil
}

const idempotencyPartition = "idempotency"

type idempotencyRow struct {
	tablestore.Meta           // PartitionKey: "idempotency"; RowKey: hash of app and key
	At              time.Time // when the first request with the key came
}

// IdempotencyRetention is how long a retried request is recognised.
const IdempotencyRetention = 24 * time.Hour

// ClaimIdempotency records the first request with an idempotency key (as
// a hash, never the key itself) and returns when it came: at for the first
// request, the first one's time for a retry, so a retry a second later
// writes the same rows again instead of new ones.
func (s *Status) ClaimIdempotency(ctx context.Context, hash string, at time.Time) (time.Time, error) {
	row := &idempotencyRow{Meta: tablestore.Meta{PartitionKey: idempotencyPartition, RowKey: hash}, At: at}
	err := s.table.Insert(ctx, row)
	if err == nil {
		return at, nil
	}
	if !errors.Is(err, tablestore.ErrExists) {
		return time.Time{}, fmt.Errorf("storage: idempotency key: %w", err)
	}
	var first idempotencyRow
	if err := s.table.Get(ctx, idempotencyPartition, hash, &first); err != nil {
		return time.Time{}, fmt.Errorf("storage: idempotency key: %w", err)
	}
	if at.Sub(first.At) > IdempotencyRetention {
		// Older than what a retry can be: a new request reusing the key.
		first.At = at
		if err := s.table.Update(ctx, &first); err != nil {
			return time.Time{}, fmt.Errorf("storage: idempotency key: %w", err)
		}
	}
	return first.At, nil
}

// DeleteIdempotencyBefore removes idempotency records older than t.
func (s *Status) DeleteIdempotencyBefore(ctx context.Context, t time.Time) (int, error) {
	return deleteMatching(ctx, s.table, tablestore.And(tablestore.PartitionIs(idempotencyPartition), tablestore.Lt("At", t)))
}

type deliveryRow struct {
	tablestore.Meta           // PartitionKey: "status"; RowKey: "delivery." and the sender instance (escaped)
	Failing         string    // JSON of []alerts.Health
	At              time.Time // when the instance last wrote it
}

// deliveryFresh is how long an instance's view of failing destinations
// counts: senders rewrite theirs every minute, and an instance that went
// away stops counting after this.
const deliveryFresh = 5 * time.Minute

// DeliveryOf is where one sender instance records the destinations it
// finds failing: every instance sends, each knows only its own tries.
func (s *Status) DeliveryOf(instance string) alerts.HealthStore {
	return deliveryOf{s, instance}
}

type deliveryOf struct {
	s        *Status
	instance string
}

func (d deliveryOf) PutDelivery(ctx context.Context, failing []alerts.Health) error {
	b, err := json.Marshal(failing)
	if err != nil {
		return fmt.Errorf("storage: delivery status: %w", err)
	}
	row := &deliveryRow{Meta: tablestore.Meta{PartitionKey: "status", RowKey: "delivery." + leaseKey(d.instance)}, Failing: string(b), At: time.Now()}
	if err := d.s.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: delivery status: %w", err)
	}
	return nil
}

// Delivery reads the failing destinations as the instances that sent
// lately see them, merged: failing since the earliest, with the latest
// error. A row that does not read is skipped (it is rewritten within a
// minute).
func (s *Status) Delivery(ctx context.Context) ([]alerts.Health, error) {
	q := tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs("status"), tablestore.RowKeyPrefix("delivery."))}
	merged := map[string]alerts.Health{}
	for row, err := range tablestore.Rows[deliveryRow](ctx, s.table, q) {
		if err != nil {
			var rowErr *tablestore.RowError
			if errors.As(err, &rowErr) {
				continue
			}
			return nil, fmt.Errorf("storage: delivery status: %w", err)
		}
		if time.Since(row.At) > deliveryFresh {
			continue
		}
		var hs []alerts.Health
		if json.Unmarshal([]byte(row.Failing), &hs) != nil {
			continue
		}
		for _, h := range hs {
			m, ok := merged[h.Destination]
			if ok && h.NextTry.Before(m.NextTry) {
				h.LastError, h.NextTry = m.LastError, m.NextTry
			}
			if ok && m.FailingSince.Before(h.FailingSince) {
				h.FailingSince = m.FailingSince
			}
			h.Failures = max(h.Failures, m.Failures)
			merged[h.Destination] = h
		}
	}
	out := make([]alerts.Health, 0, len(merged))
	for _, h := range merged {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Destination < out[j].Destination })
	return out, nil
}
