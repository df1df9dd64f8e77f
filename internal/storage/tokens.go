package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/teams"
)

// Tokens keeps the API tokens people issued: their hashes, never the
// tokens.
type Tokens struct {
	table  *tablestore.Table
	faults *Faults
}

const tokenPartition = "token"

type tokenRow struct {
	tablestore.Meta // PartitionKey: "token"; RowKey: the token's id
	Name            string
	Role            string
	Team            string // empty: the role on every app
	CreatedBy       string
	CreatedAt       time.Time
	Expires         time.Time
	Revoked         time.Time
	LastUsed        time.Time
	Hash            string
}

func (r tokenRow) token() (auth.IssuedToken, error) {
	role, err := auth.ParseRole(r.Role)
	if err != nil || r.Expires.IsZero() || len(r.Hash) != 64 || len(r.RowKey) != 16 {
		return auth.IssuedToken{}, fmt.Errorf("storage: token %s: not an issued token's row", r.RowKey)
	}
	if r.Team != "" && (!teams.ValidName(r.Team) || role == auth.RoleAdmin) {
		return auth.IssuedToken{}, fmt.Errorf("storage: token %s: Team %q is not a team's name, or names a team with the admin role", r.RowKey, r.Team)
	}
	return auth.IssuedToken{ID: r.RowKey, Name: r.Name, Role: role, Team: r.Team, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, Expires: r.Expires,
		Revoked: r.Revoked, LastUsed: r.LastUsed, Hash: r.Hash}, nil
}

// List reads every issued token, at most auth.MaxIssued; rows that do
// not read are skipped (they verify nothing).
func (t *Tokens) List(ctx context.Context) ([]auth.IssuedToken, error) {
	var out []auth.IssuedToken
	for row, err := range tablestore.Rows[tokenRow](ctx, t.table, tablestore.Query{Filter: tablestore.PartitionIs(tokenPartition)}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			t.faults.Add(Fault{Table: TableTokens, Key: rowErr.PartitionKey + "/" + rowErr.RowKey, Problem: rowErr.Err.Error(), Seen: time.Now()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: tokens: %w", err)
		}
		tok, err := row.token()
		if err != nil {
			t.faults.Add(Fault{Table: TableTokens, Key: row.PartitionKey + "/" + row.RowKey, Problem: err.Error() + ": it verifies nothing", Seen: time.Now()})
			continue
		}
		out = append(out, tok)
		if len(out) >= auth.MaxIssued {
			break
		}
	}
	return out, nil
}

// Insert stores a new token.
func (t *Tokens) Insert(ctx context.Context, tok auth.IssuedToken) error {
	row := &tokenRow{Meta: tablestore.Meta{PartitionKey: tokenPartition, RowKey: tok.ID}, Name: tok.Name, Role: tok.Role.String(), Team: tok.Team, CreatedBy: tok.CreatedBy,
		CreatedAt: tok.CreatedAt, Expires: tok.Expires, Hash: tok.Hash}
	return t.table.Insert(ctx, row)
}

// Revoke marks a token revoked at at; auth.ErrNoToken when there is no
// such token.
func (t *Tokens) Revoke(ctx context.Context, id string, at time.Time) error {
	var row tokenRow
	if err := t.table.Get(ctx, tokenPartition, id, &row); errors.Is(err, tablestore.ErrNotFound) {
		return auth.ErrNoToken
	} else if err != nil {
		return err
	}
	if !row.Revoked.IsZero() {
		return nil
	}
	err := t.table.Merge(ctx, &tokenRevocation{Meta: tablestore.Meta{PartitionKey: tokenPartition, RowKey: id, ETag: row.ETag}, Revoked: at})
	if errors.Is(err, tablestore.ErrNotFound) {
		return auth.ErrNoToken // deleted meanwhile
	}
	return err
}

// The merges of a token row: only the column each sets (a merge writes
// every string of its struct, empty or not).
type (
	tokenRevocation struct {
		tablestore.Meta
		Revoked time.Time
	}
	tokenUse struct {
		tablestore.Meta
		LastUsed time.Time
	}
)

// Touch records a token's last use.
func (t *Tokens) Touch(ctx context.Context, id string, at time.Time) error {
	return t.table.Merge(ctx, &tokenUse{Meta: tablestore.Meta{PartitionKey: tokenPartition, RowKey: id, ETag: "*"}, LastUsed: at})
}
