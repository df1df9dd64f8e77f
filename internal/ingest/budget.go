package ingest

import (
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// What one request, and one app, may cost the store. A report's items may
// each name another function and second, so without a bound one request
// of 10,000 items back-dated across a day writes 10,000 rows; at the
// per-app request rate one key holder would reach the storage account's
// throttle (about 20,000 entities a second), and every app's leases and
// evaluator with it. docs/reliability.md has the arithmetic.
const (
	// MaxRows is how many rows one request may write: failure rows (one
	// per function and second) and tallies (one per function and minute).
	// Items past it that would need a row of their own are refused, each
	// with why; items that add to a row already written are not.
	MaxRows = 200
	// MaxExportRows is MaxRows for an OpenTelemetry export: the SDKs'
	// batch processors send up to 512 spans or records at once (their
	// default maxExportBatchSize), which a busy app's host may spread over
	// as many functions and seconds; refusing some would lose counts no
	// exporter sends again.
	MaxExportRows = 512
	// HorizonSlack is how much older than its app's longest circuit
	// window (an hour at least, what the lists show) an item may be: a
	// sender's queue of a few minutes still counts, and older items would
	// count toward no circuit.
	HorizonSlack = 10 * time.Minute
	// DefaultRowsPerSecond and DefaultRowBurst are one app's budget of
	// rows, whatever the number of requests: 2.5 % of the account's
	// target, bursting to 25 full requests. A tally costs two (a read and
	// a write).
	DefaultRowsPerSecond = 500
	DefaultRowBurst      = 25 * MaxRows
)

// ErrRowBudget is an app's row budget spent: nothing was kept, and the
// sender should retry in a second.
var ErrRowBudget = errors.New("ingest: this app's budget of rows per second is spent; nothing was stored")

// RowBudget is a token bucket of rows per app. Only verified apps reach
// it, so it holds one bucket per real app.
type RowBudget struct {
	perSecond rate.Limit
	burst     int

	mu   sync.Mutex
	apps map[string]*rate.Limiter
}

// NewRowBudget is a budget of perSecond rows per app, bursting to burst;
// defaults for zero.
func NewRowBudget(perSecond float64, burst int) *RowBudget {
	if perSecond <= 0 {
		perSecond = DefaultRowsPerSecond
	}
	if burst <= 0 {
		burst = DefaultRowBurst
	}
	return &RowBudget{perSecond: rate.Limit(perSecond), burst: max(burst, 2*MaxExportRows), apps: map[string]*rate.Limiter{}}
}

// Charge is Spend as an error: ErrRowBudget when the rows were not taken.
func (b *RowBudget) Charge(appID string, rows int, now time.Time) error {
	if !b.Spend(appID, rows, now) {
		return ErrRowBudget
	}
	return nil
}

// Spend takes rows from appID's bucket, all or none.
func (b *RowBudget) Spend(appID string, rows int, now time.Time) bool {
	b.mu.Lock()
	l, ok := b.apps[appID]
	if !ok {
		l = rate.NewLimiter(b.perSecond, b.burst)
		b.apps[appID] = l
	}
	b.mu.Unlock()
	return l.AllowN(now, rows)
}
