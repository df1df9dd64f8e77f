package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// withSecrets is a row with fields sealed at rest: its secrets by field
// name, each bound to table/row/field.
type withSecrets interface {
	secrets() map[string]*string
	Keys() (partitionKey, rowKey string)
}

func sealedAt(table string, r withSecrets, field string) string {
	_, rk := r.Keys()
	return table + "/" + rk + "/" + field
}

// openSecrets opens r's sealed fields in place.
func openSecrets(box *sealed.Box, table string, r withSecrets) error {
	for field, v := range r.secrets() {
		pt, _, err := box.Open(*v, sealedAt(table, r, field))
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		*v = pt
	}
	return nil
}

// sealSecrets seals r's secret fields in place (nil box: as given).
func sealSecrets(box *sealed.Box, table string, r withSecrets) {
	for field, v := range r.secrets() {
		*v = box.Seal(*v, sealedAt(table, r, field))
	}
}

func staleSecrets(box *sealed.Box, r withSecrets) bool {
	for _, v := range r.secrets() {
		if box.Stale(*v) {
			return true
		}
	}
	return false
}

// reseal seals the secrets of rows written before sealing (or under a key
// no longer first), each with a conditional update: a row changed since it
// was read is left for the next start, and one that does not read or open
// stays as it is, shown as a bad row where it is read. It returns how many
// rows it sealed.
func reseal[T any, PT interface {
	*T
	tablestore.Entity
	withSecrets
}](ctx context.Context, box *sealed.Box, t *tablestore.Table, q tablestore.Query, table string) (int, error) {
	if box == nil {
		return 0, nil
	}
	n := 0
	for row, err := range tablestore.Rows[T, PT](ctx, t, q) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("storage: reseal %s: %w", table, err)
		}
		r := PT(&row)
		if !staleSecrets(box, r) || openSecrets(box, table, r) != nil {
			continue
		}
		sealSecrets(box, table, r)
		if err := t.Update(ctx, r); err == nil {
			n++
		} else if !errors.Is(err, tablestore.ErrConflict) {
			_, rk := r.Keys()
			return n, fmt.Errorf("storage: reseal %s %s: %w", table, rk, err)
		}
	}
	return n, nil
}
