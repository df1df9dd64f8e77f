package ingest

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/otlp"
)

// ArrivalStore keeps arrival rows (storage.Arrivals).
type ArrivalStore interface {
	PutArrivals(ctx context.Context, rows []otlp.Arrival) error
	// SignalsOf reads an app's rows of buckets that end after from; whole
	// is false when a row did not read.
	SignalsOf(ctx context.Context, appID string, from time.Time) (rows []otlp.Arrival, whole bool, err error)
}

// Arrivals adds up what this instance received, and writes it every few
// seconds: one row per app, signal and bucket, replaced in place.
type Arrivals struct {
	Store    ArrivalStore
	Instance string
	Logger   *slog.Logger

	mu    sync.Mutex
	rows  map[arrivalKey]*otlp.Arrival
	dirty map[arrivalKey]bool
}

type arrivalKey struct {
	app    string
	source otlp.Source
	bucket time.Time
}

// maxArrivalRows bounds the rows held: apps are few, and every key was
// verified before an export is added.
const maxArrivalRows = 10_000

// Add adds one export's figures.
func (a *Arrivals) Add(x otlp.Arrival) {
	x.Bucket = x.Last.UTC().Truncate(otlp.Bucket)
	k := arrivalKey{x.App, x.Source, x.Bucket}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rows == nil {
		a.rows, a.dirty = map[arrivalKey]*otlp.Arrival{}, map[arrivalKey]bool{}
	}
	row, ok := a.rows[k]
	if !ok {
		// Older buckets are written and no longer added to.
		maps.DeleteFunc(a.rows, func(k arrivalKey, _ *otlp.Arrival) bool { return k.bucket.Before(x.Bucket) && !a.dirty[k] })
		if len(a.rows) >= maxArrivalRows {
			return
		}
		row = &otlp.Arrival{App: x.App, Source: x.Source, Bucket: x.Bucket, Instance: a.Instance}
		a.rows[k] = row
	}
	row.Add(x)
	a.dirty[k] = true
}

// Flush writes the rows that changed since the last flush.
func (a *Arrivals) Flush(ctx context.Context) error {
	a.mu.Lock()
	var rows []otlp.Arrival
	for k := range a.dirty {
		r := *a.rows[k]
		r.Unattributed = maps.Clone(r.Unattributed)
		r.ServiceNames = slices.Clone(r.ServiceNames)
		r.Functions = maps.Clone(r.Functions)
		r.Calls = maps.Clone(r.Calls) // AddCall never writes within a kept slice
		rows = append(rows, r)
	}
	clear(a.dirty)
	a.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	if err := a.Store.PutArrivals(ctx, rows); err != nil {
		a.mu.Lock()
		for _, r := range rows {
			a.dirty[arrivalKey{r.App, r.Source, r.Bucket}] = true
		}
		a.mu.Unlock()
		return err
	}
	return nil
}

// Run flushes every interval until ctx ends, and once more then.
func (a *Arrivals) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	flush := func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil && a.Logger != nil {
			a.Logger.Warn("ingest: could not write what arrived over OpenTelemetry; will try again", "error", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			flush(ctx)
		}
	}
}
