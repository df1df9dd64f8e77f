package storage

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/fault"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Fault is a stored row that Fusebox could not read: another program wrote
// it with a missing or wrong value. It is skipped, never taken for a zero
// value, and listed on the dashboard until it is fixed or removed.
type Fault = fault.Row

// maxFaults bounds what is kept per table, so a table full of bad rows
// cannot grow this process's memory; the count still says how many.
const maxFaults = 200

// Faults collects the unreadable rows of every table that this process has
// read. Every repository reports to the same one.
type Faults struct {
	mu      sync.Mutex
	byTable map[string]map[string]Fault
	count   map[string]int
}

func newFaults() *Faults {
	return &Faults{byTable: map[string]map[string]Fault{}, count: map[string]int{}}
}

// Replace sets a table's faults after a read of the whole table.
func (f *Faults) Replace(table string, faults []Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]Fault{}
	for _, x := range faults {
		if len(m) < maxFaults {
			m[x.Key] = x
		}
	}
	f.byTable[table], f.count[table] = m, len(faults)
}

// Add records faults found by a partial read (one job's runs, the rows that
// changed), keeping the others.
func (f *Faults) Add(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range faults {
		m := f.byTable[x.Table]
		if m == nil {
			m = map[string]Fault{}
			f.byTable[x.Table] = m
		}
		if _, seen := m[x.Key]; !seen {
			if len(m) >= maxFaults {
				continue
			}
			f.count[x.Table]++
		}
		m[x.Key] = x
	}
}

// Clear forgets one row, once it reads again or is gone.
func (f *Faults) Clear(table, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.byTable[table][key]; ok {
		delete(f.byTable[table], key)
		f.count[table]--
	}
}

// List returns every fault known, by table and key.
func (f *Faults) List() []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Fault
	for _, m := range f.byTable {
		for _, x := range m {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b Fault) int {
		if a.Table != b.Table {
			if a.Table < b.Table {
				return -1
			}
			return 1
		}
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return out
}

// Counts returns how many unreadable rows each table has, for metrics.
func (f *Faults) Counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.count))
	for t, n := range f.count {
		out[t] = n
	}
	return out
}

// readRows collects the rows of a query, converting each with conv; a row
// that does not decode or convert is skipped and returned as a fault.
func readRows[T any, PT interface {
	*T
	tablestore.Entity
}, D any](ctx context.Context, t *tablestore.Table, q tablestore.Query, table string, conv func(T) (D, error)) ([]D, []Fault, error) {
	return readRowsUpTo[T, PT](ctx, t, q, table, 0, conv)
}

// readRowsUpTo is readRows stopping after max rows read (0: none).
func readRowsUpTo[T any, PT interface {
	*T
	tablestore.Entity
}, D any](ctx context.Context, t *tablestore.Table, q tablestore.Query, table string, max int, conv func(T) (D, error)) ([]D, []Fault, error) {
	var out []D
	var faults []Fault
	now := time.Now()
	for row, err := range tablestore.Rows[T, PT](ctx, t, q) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			faults = append(faults, Fault{Table: table, Key: rowErr.PartitionKey + "/" + rowErr.RowKey, Problem: rowErr.Err.Error(), Seen: now})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		d, err := conv(row)
		if err != nil {
			faults = append(faults, Fault{Table: table, Key: rowKey[T, PT](row), Problem: err.Error(), Seen: now})
			continue
		}
		if out = append(out, d); max > 0 && len(out) >= max {
			break
		}
	}
	return out, faults, nil
}

// rowKey names a row in a fault: "partition/row".
func rowKey[T any, PT interface {
	*T
	tablestore.Entity
}](row T) string {
	pk, rk := PT(&row).Keys()
	return pk + "/" + rk
}
