package otlp

import (
	"context"
	"time"
)

// ArrivalReader reads what arrived from an app's hosts since from
// (storage.Arrivals).
type ArrivalReader interface {
	ArrivalsOf(ctx context.Context, appID string, from time.Time) ([]Arrival, error)
}
