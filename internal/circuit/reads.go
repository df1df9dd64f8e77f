package circuit

import (
	"context"
	"time"
)

// What the pages read of circuits, as internal/storage spells it. The
// web layer holds these ports and the concrete services; it declares no
// interface of its own over storage.

// CircuitReader reads circuits and their flip logs (storage.Circuits).
type CircuitReader interface {
	List(ctx context.Context) ([]Circuit, error)
	// Recent may answer from this instance's last list, when it is no
	// older than maxAge.
	Recent(ctx context.Context, maxAge time.Duration) ([]Circuit, error)
	Get(ctx context.Context, appID, function string) (Circuit, error)
	Flips(ctx context.Context, appID, function string, limit int) ([]Flip, error)
}

// RateReader reads failures per minute (storage.Rates).
type RateReader interface {
	Since(ctx context.Context, from time.Time) ([]MinuteCount, error)
	Of(ctx context.Context, appID, function string, from time.Time) ([]MinuteCount, error)
}

// ProbeReader reads what a circuit's health probe last heard (storage.Probes).
type ProbeReader interface {
	Get(ctx context.Context, appID, function string) (ProbeRecord, error)
}

// WindowReader reads the failure rows of seconds in [from, to] and the
// rows that could not be read (storage.PageRows).
type WindowReader interface {
	Window(ctx context.Context, from, to time.Time) ([]FailureRow, []Rejection, error)
}
