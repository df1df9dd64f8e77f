package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Session is a signed-in browser.
type Session struct {
	TokenHash string // hex SHA-256 of the browser's token
	Principal
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionStore keeps sessions. Get returns an error wrapping a not-found
// sentinel of the store's choosing for a missing session; Sessions treats
// every Get error other than a context error as "no session".
type SessionStore interface {
	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, tokenHash string) (Session, error)
	DeleteSession(ctx context.Context, tokenHash string) error
}

// Sessions starts, finds and ends sessions.
type Sessions struct {
	store  SessionStore
	signer signer
	ttl    time.Duration
	now    func() time.Time
}

// NewSessions signs cookies with key (at least 32 bytes) and keeps sessions
// for ttl. now is the clock.
func NewSessions(store SessionStore, key []byte, ttl time.Duration, now func() time.Time) (*Sessions, error) {
	if len(key) < 32 {
		return nil, errors.New("auth: the session key must be at least 32 bytes")
	}
	if ttl <= 0 {
		return nil, errors.New("auth: the session lifetime must be positive")
	}
	return &Sessions{store: store, signer: signer{key: key}, ttl: ttl, now: now}, nil
}

const sessionPurpose = "fusebox-session"

// Start creates a session for p and returns the cookie value to hand the
// browser, and when it expires.
func (s *Sessions) Start(ctx context.Context, p Principal) (string, time.Time, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", time.Time{}, fmt.Errorf("auth: session token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	sess := Session{TokenHash: hashToken(token), Principal: p, CreatedAt: now, ExpiresAt: now.Add(s.ttl)}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		return "", time.Time{}, fmt.Errorf("auth: start session: %w", err)
	}
	return s.signer.sign(sessionPurpose, token), sess.ExpiresAt, nil
}

// Lookup finds the live session a cookie value names. Forged, unknown and
// expired cookies are ErrNoSession; storage trouble is reported as itself.
func (s *Sessions) Lookup(ctx context.Context, cookie string) (Session, error) {
	token, ok := s.signer.verify(sessionPurpose, cookie)
	if !ok {
		return Session{}, ErrNoSession
	}
	sess, err := s.store.GetSession(ctx, hashToken(token))
	if err != nil {
		if ctx.Err() != nil || !isNotFound(err) {
			return Session{}, fmt.Errorf("auth: look up session: %w", err)
		}
		return Session{}, ErrNoSession
	}
	if !s.now().Before(sess.ExpiresAt) {
		return Session{}, ErrNoSession
	}
	return sess, nil
}

// End deletes the session a cookie names. Ending a session that does not
// exist is not an error: the person is signed out either way.
func (s *Sessions) End(ctx context.Context, cookie string) error {
	token, ok := s.signer.verify(sessionPurpose, cookie)
	if !ok {
		return nil
	}
	if err := s.store.DeleteSession(ctx, hashToken(token)); err != nil && !isNotFound(err) {
		return fmt.Errorf("auth: end session: %w", err)
	}
	return nil
}

// ErrSessionNotFound is what a SessionStore wraps when a session is missing.
var ErrSessionNotFound = errors.New("session not found")

func isNotFound(err error) bool { return errors.Is(err, ErrSessionNotFound) }

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
