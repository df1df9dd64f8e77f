package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Sessions keeps signed-in browsers. Rows are keyed by the SHA-256 of the
// browser's token (never the token), spread over 256 partitions by its
// first two hex digits.
type Sessions struct{ table *tablestore.Table }

type sessionRow struct {
	tablestore.Meta // PartitionKey: hash[:2]; RowKey: hash
	Subject         string
	Name            string
	Email           string
	Role            string
	Claims          string // JSON list: the provider's role and group claim values, for teams
	Provider        string
	CreatedAt       time.Time
	ExpiresAt       time.Time
}

// CreateSession stores a new session.
func (s *Sessions) CreateSession(ctx context.Context, sess auth.Session) error {
	claims, err := json.Marshal(sess.Claims)
	if err != nil {
		return err
	}
	row := &sessionRow{
		Meta:    tablestore.Meta{PartitionKey: sess.TokenHash[:2], RowKey: sess.TokenHash},
		Subject: sess.Subject, Name: sess.Name, Email: sess.Email, Role: sess.Role.String(), Claims: string(claims),
		Provider: sess.Provider, CreatedAt: sess.CreatedAt, ExpiresAt: sess.ExpiresAt,
	}
	if err := s.table.Insert(ctx, row); err != nil {
		return fmt.Errorf("storage: create session: %w", err)
	}
	return nil
}

// GetSession reads a session; a missing one wraps auth.ErrSessionNotFound.
func (s *Sessions) GetSession(ctx context.Context, tokenHash string) (auth.Session, error) {
	if len(tokenHash) != 64 {
		return auth.Session{}, auth.ErrSessionNotFound
	}
	var row sessionRow
	if err := s.table.Get(ctx, tokenHash[:2], tokenHash, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return auth.Session{}, fmt.Errorf("storage: %w", auth.ErrSessionNotFound)
		}
		return auth.Session{}, fmt.Errorf("storage: get session: %w", err)
	}
	role, err := auth.ParseRole(row.Role)
	if err != nil {
		return auth.Session{}, fmt.Errorf("storage: session %s…: %w", tokenHash[:8], err)
	}
	var claims []string
	if row.Claims != "" && len(row.Claims) <= auth.MaxClaims*(auth.MaxClaimLen+8) {
		if err := json.Unmarshal([]byte(row.Claims), &claims); err != nil || len(claims) > auth.MaxClaims {
			return auth.Session{}, fmt.Errorf("storage: session %s…: Claims do not read", tokenHash[:8])
		}
	}
	return auth.Session{
		TokenHash: tokenHash,
		Principal: auth.Principal{Subject: row.Subject, Name: row.Name, Email: row.Email, Role: role, Provider: row.Provider, Claims: claims},
		CreatedAt: row.CreatedAt, ExpiresAt: row.ExpiresAt,
	}, nil
}

// DeleteSession removes a session; a missing one wraps auth.ErrSessionNotFound.
func (s *Sessions) DeleteSession(ctx context.Context, tokenHash string) error {
	if len(tokenHash) != 64 {
		return auth.ErrSessionNotFound
	}
	if err := s.table.Delete(ctx, tokenHash[:2], tokenHash, tablestore.AnyETag); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return fmt.Errorf("storage: %w", auth.ErrSessionNotFound)
		}
		return fmt.Errorf("storage: delete session: %w", err)
	}
	return nil
}

// DeleteExpired removes sessions that expired before now and returns how
// many it removed.
func (s *Sessions) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	n := 0
	q := tablestore.Query{Filter: tablestore.Lt("ExpiresAt", now), Select: []string{"PartitionKey", "RowKey"}}
	for row, err := range tablestore.Rows[sessionRow](ctx, s.table, q) {
		if err != nil {
			return n, fmt.Errorf("storage: expired sessions: %w", err)
		}
		if err := s.table.Delete(ctx, row.PartitionKey, row.RowKey, row.ETag); err != nil && !errors.Is(err, tablestore.ErrNotFound) && !errors.Is(err, tablestore.ErrConflict) {
			return n, fmt.Errorf("storage: delete expired session: %w", err)
		}
		n++
	}
	return n, nil
}
