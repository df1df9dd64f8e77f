package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// A circuit's settings are one column of its row, Settings, holding
// circuit.Spec as JSON: a new setting is a field of Spec and nothing here.

// maxSettingsJSON bounds the Settings column read: a row written by hand
// costs at most this much to decode. Table Storage holds 32K characters (UTF-16).
const maxSettingsJSON = 32 << 10

// settingsRow is what a change of settings merges into a circuit's row:
// one conditional write, which leaves the state as it is.
type settingsRow struct {
	tablestore.Meta
	Function string
	Settings string
}

// settingsJSON is how the Settings column spells s.
func settingsJSON(s circuit.Settings) string {
	b, err := json.Marshal(s.Spec())
	if err != nil { // a Spec is plain fields: cannot happen
		panic(fmt.Sprintf("storage: settings as JSON: %v", err))
	}
	return string(b)
}

// setSettings copies a circuit's settings into the row.
func (r *circuitRow) setSettings(c circuit.Circuit) {
	r.Function, r.Settings = c.Function, settingsJSON(c.Settings)
}

// UpdateSettings changes a circuit's settings, keeping its state: one
// merge, on condition that it is still at ci.Version.
func (c *Circuits) UpdateSettings(ctx context.Context, ci circuit.Circuit) error {
	defer c.wrote()
	row := &settingsRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: circuitKey(ci.Function), ETag: tablestore.ETag(ci.Version)},
		Function: ci.Function, Settings: settingsJSON(ci.Settings)}
	if err := c.table.Merge(ctx, row); err != nil {
		return fmt.Errorf("storage: update circuit %s: %w", ci.ID(), missingOrConflict(err, ci))
	}
	return nil
}

// settings are the row's settings, checked as anything written by others
// is: what would break counting is an error, what costs only a feature
// is left out.
func (r circuitRow) settings() (circuit.Settings, error) {
	var spec circuit.Spec
	switch {
	case len(r.Settings) > maxSettingsJSON:
		return circuit.Settings{}, fmt.Errorf("the Settings column is %d bytes, more than the %d a circuit's settings may hold", len(r.Settings), maxSettingsJSON)
	case r.Settings != "":
		if err := json.Unmarshal([]byte(r.Settings), &spec); err != nil {
			return circuit.Settings{}, fmt.Errorf("the Settings column is not a circuit's settings: %w", err)
		}
	case r.columnSettings != (columnSettings{}):
		spec = r.columnSettings.spec()
	default:
		return circuit.Settings{}, errors.New("the row holds no settings (no Settings column)")
	}
	return spec.Stored()
}

// checkCircuitRow is a circuit row as read, checked.
func checkCircuitRow(r circuitRow) (circuitRow, error) {
	if strings.HasPrefix(r.RowKey, actuationPrefix) {
		// An actuation row, read with the circuits: one that does not
		// check is a bad row, and its circuit reads as not applied.
		return r, asActuation(r).check()
	}
	r.keepColumnSettings()
	_, err := r.toCircuit(nil)
	return r, err
}

// MoveCircuitSettings is migration 12: it rewrites each circuit row that
// keeps its settings in columns with a Settings column instead (and its
// actuation, when it keeps that in columns too, in its own row first).
// Run again, it finds nothing to do. A row whose columns do not make
// readable settings is left as it is, to be shown as a bad row.
func MoveCircuitSettings(ctx context.Context, svc *tablestore.Service) error {
	return rewriteCircuitRows(ctx, svc.Table(TableCircuits), "move settings of", func(row *circuitRow) (bool, error) {
		if row.Settings != "" || row.columnSettings == (columnSettings{}) {
			return false, nil
		}
		if _, err := row.settings(); err != nil {
			return false, nil
		}
		row.Settings = settingsJSON(row.columnSettings.spec().Settings())
		return true, nil
	})
}

// rewriteCircuitRows replaces every circuit row that change changes (it
// says whether it did), each on condition that the row did not change
// since it was read (a row that changed is read again, a few times). A
// replace drops the row's read-only columns: the actuation they hold is
// moved to its own row first.
func rewriteCircuitRows(ctx context.Context, t *tablestore.Table, what string, change func(*circuitRow) (bool, error)) error {
	q := tablestore.Query{Filter: tablestore.RowKeyPrefix(circuitPrefix)}
	for row, err := range tablestore.Rows[circuitRow](ctx, t, q) {
		if err != nil {
			var bad *tablestore.RowError
			if errors.As(err, &bad) {
				continue // unreadable to any release; shown as a bad row
			}
			return fmt.Errorf("storage: %s circuits: %w", what, err)
		}
		for attempt := 0; ; attempt++ {
			changed, err := change(&row)
			if err != nil || !changed {
				break
			}
			if err = keepActuation(ctx, t, row); err == nil {
				err = keepLowered(ctx, t, row)
			}
			if err == nil {
				err = t.Update(ctx, &row) // a replace: the old columns go
			}
			if err == nil || attempt == 4 || !errors.Is(err, tablestore.ErrConflict) {
				if err != nil {
					return fmt.Errorf("storage: %s circuit %s/%s: %w", what, row.PartitionKey, row.RowKey, err)
				}
				break
			}
			pk, rk := row.PartitionKey, row.RowKey
			row = circuitRow{}
			if err := t.Get(ctx, pk, rk, &row); errors.Is(err, tablestore.ErrNotFound) {
				break // deleted meanwhile
			} else if err != nil {
				return fmt.Errorf("storage: %s circuit %s/%s: %w", what, pk, rk, err)
			}
		}
	}
	return nil
}

// keepActuation writes the actuation a circuit row keeps in its old
// columns as the circuit's actuation row, unless one exists (written by
// this release's switch: newer).
func keepActuation(ctx context.Context, t *tablestore.Table, row circuitRow) error {
	if row.legacyActuation == (legacyActuation{}) {
		return nil
	}
	a := asActuation(row)
	a.Meta = tablestore.Meta{PartitionKey: row.PartitionKey, RowKey: actuationKey(strings.TrimPrefix(row.RowKey, circuitPrefix))}
	a.FenceLease, a.FenceGeneration = "", 0
	if err := t.Insert(ctx, a); err != nil && !errors.Is(err, tablestore.ErrExists) {
		return err
	}
	return nil
}

// MoveCircuitActuation is migration 13: each circuit row that keeps its
// actuation (applied episode, switch errors, confirmation, drift) in
// columns has it moved to the circuit's actuation row, and loses the
// columns. Run again, it finds nothing to do.
func MoveCircuitActuation(ctx context.Context, svc *tablestore.Service) error {
	return rewriteCircuitRows(ctx, svc.Table(TableCircuits), "move actuation of", func(row *circuitRow) (bool, error) {
		return row.legacyActuation != (legacyActuation{}), nil
	})
}

// MoveLowered is migration 14: each circuit row that keeps what a
// throttle lowered in its Lowered column has it moved to the circuit's
// actuation row, and loses the column. Run again, it finds nothing to do.
func MoveLowered(ctx context.Context, svc *tablestore.Service) error {
	return rewriteCircuitRows(ctx, svc.Table(TableCircuits), "move what a throttle lowered of", func(row *circuitRow) (bool, error) {
		return row.Lowered != "", nil
	})
}

// keepLowered writes what a throttle lowered, where row keeps it in the
// last release's column, into the circuit's actuation row (unless that
// row says already), before a replace of row drops the column. The
// actuation row is written on condition it did not change since read.
func keepLowered(ctx context.Context, t *tablestore.Table, row circuitRow) error {
	if row.Lowered == "" {
		return nil
	}
	function := strings.TrimPrefix(row.RowKey, circuitPrefix)
	a, etag, err := getActuation(ctx, t, row.PartitionKey, function)
	switch {
	case err != nil:
		return err
	case a == nil || a.Incarnation != row.Incarnation: // none, unreadable or a deleted circuit's: start afresh
		a = &actuationRow{Incarnation: row.Incarnation, Episode: row.Episode}
	case a.Lowered != "":
		return nil // written since by this release: newer
	}
	a.Meta = tablestore.Meta{PartitionKey: row.PartitionKey, RowKey: actuationKey(function), ETag: etag}
	a.Lowered, a.LoweredKind = row.Lowered, row.LoweredKind
	if a.ETag == "" {
		return t.Insert(ctx, a)
	}
	return t.Update(ctx, a)
}
