package auth

import (
	"context"
	"errors"
	"time"
)

// TokenStore keeps the API tokens people issue (storage.Tokens).
type TokenStore interface {
	List(ctx context.Context) ([]IssuedToken, error)
	Insert(ctx context.Context, t IssuedToken) error
	Revoke(ctx context.Context, id string, at time.Time) error
}

// ErrNoToken is a token that was never issued.
var ErrNoToken = errors.New("auth: no such token")
