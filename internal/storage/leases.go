package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Leases keeps lease records in one partition, keyed by the lease name with
// the characters that keys may not hold percent-encoded.
type Leases struct{ table *tablestore.Table }

const leasesPartition = "lease"

type leaseRow struct {
	tablestore.Meta // PartitionKey: "lease"; RowKey: encoded name
	Name            string
	Holder          string
	Generation      int64
	DurationMs      int64
	AcquiredAt      time.Time
	RenewedAt       time.Time
}

// leaseKey percent-encodes what Table Storage forbids in keys (/ \ # ?),
// and % itself, so every name maps to exactly one key.
func leaseKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch r {
		case '/', '\\', '#', '?', '%':
			fmt.Fprintf(&b, "%%%02X", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (r leaseRow) toRecord() (lease.Record, error) {
	name, err := url.PathUnescape(r.RowKey)
	if err != nil || (r.Name != "" && r.Name != name) {
		return lease.Record{}, fmt.Errorf("storage: lease row %q does not match its name %q", r.RowKey, r.Name)
	}
	if r.Generation < 1 || r.DurationMs < 1 {
		return lease.Record{}, fmt.Errorf("storage: lease %s: generation %d and duration %dms must be positive", name, r.Generation, r.DurationMs)
	}
	return lease.Record{
		Name: name, Holder: r.Holder, Generation: r.Generation, Duration: time.Duration(r.DurationMs) * time.Millisecond,
		AcquiredAt: r.AcquiredAt, RenewedAt: r.RenewedAt, Version: string(r.ETag),
	}, nil
}

func rowOf(rec lease.Record) *leaseRow {
	return &leaseRow{
		Meta: tablestore.Meta{PartitionKey: leasesPartition, RowKey: leaseKey(rec.Name), ETag: tablestore.ETag(rec.Version)},
		Name: rec.Name, Holder: rec.Holder, Generation: rec.Generation, DurationMs: rec.Duration.Milliseconds(),
		AcquiredAt: rec.AcquiredAt, RenewedAt: rec.RenewedAt,
	}
}

func leaseErr(op, name string, err error) error {
	switch {
	case errors.Is(err, tablestore.ErrNotFound):
		return fmt.Errorf("storage: %s lease %s: %w", op, name, lease.ErrNotFound)
	case errors.Is(err, tablestore.ErrConflict), errors.Is(err, tablestore.ErrExists):
		return fmt.Errorf("storage: %s lease %s: %w", op, name, lease.ErrConflict)
	}
	return fmt.Errorf("storage: %s lease %s: %w", op, name, err)
}

// Get reads a lease.
func (l *Leases) Get(ctx context.Context, name string) (lease.Record, error) {
	var row leaseRow
	err := l.table.Get(ctx, leasesPartition, leaseKey(name), &row)
	if err == nil {
		var rec lease.Record
		if rec, err = row.toRecord(); err == nil {
			return rec, nil
		}
	}
	if row.ETag != "" { // read, with its ETag, but its fields do not decode
		return lease.Record{}, fmt.Errorf("storage: get lease %s: %w", name, &lease.UnreadableError{Version: string(row.ETag), Err: err})
	}
	return lease.Record{}, leaseErr("get", name, err)
}

// Create inserts a new lease; an existing one is lease.ErrConflict.
func (l *Leases) Create(ctx context.Context, rec lease.Record) (lease.Record, error) {
	row := rowOf(rec)
	row.ETag = ""
	if err := l.table.Insert(ctx, row); err != nil {
		return lease.Record{}, leaseErr("create", rec.Name, err)
	}
	rec.Version = string(row.ETag)
	return rec, nil
}

// Update replaces a lease if it is still at rec.Version.
func (l *Leases) Update(ctx context.Context, rec lease.Record) (lease.Record, error) {
	row := rowOf(rec)
	if err := l.table.Update(ctx, row); err != nil {
		return lease.Record{}, leaseErr("update", rec.Name, err)
	}
	rec.Version = string(row.ETag)
	return rec, nil
}

// List returns every lease, ordered by name's key.
func (l *Leases) List(ctx context.Context) ([]lease.Record, error) {
	rows, err := tablestore.All[leaseRow](ctx, l.table, tablestore.Query{Filter: tablestore.PartitionIs(leasesPartition)})
	if err != nil {
		return nil, fmt.Errorf("storage: list leases: %w", err)
	}
	out := make([]lease.Record, 0, len(rows))
	for _, r := range rows {
		rec, err := r.toRecord()
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
