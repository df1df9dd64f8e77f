package audit

import (
	"context"
	"time"
)

// Log keeps who did what (storage.Audit).
type Log interface {
	Append(ctx context.Context, e Entry) error
	// Recent lists up to limit entries, newest first, as kept at now.
	Recent(ctx context.Context, now time.Time, limit int) ([]Entry, error)
}
