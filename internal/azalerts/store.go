package azalerts

import (
	"context"
	"time"
)

// Store keeps what Azure Monitor's action groups posted and what Fusebox
// did with each (storage.Alerts).
type Store interface {
	// Add keeps a; false when it was kept before (a retried post).
	Add(ctx context.Context, a Alert, received time.Time) (bool, error)
	SetOutcome(ctx context.Context, a Alert, o Outcome) error
	Recent(ctx context.Context, now time.Time) ([]Received, error)
}
