package hostinsight

import (
	"context"
	"time"
)

// SampleReader reads what the hosts learned over time, for the circuit
// page's charts (storage.HostSamples).
type SampleReader interface {
	Concurrency(ctx context.Context, appID, function string, from time.Time) ([]ConcurrencySample, error)
	Waiting(ctx context.Context, appID, function string, from, to time.Time) ([]WaitingSample, error)
}
