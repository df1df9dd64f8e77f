package otlp

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Bucket is how long one arrival row adds up.
const Bucket = 10 * time.Minute

// MaxFunctions bounds the functions one arrival row names: ingest keeps
// at most 50 new function names per app and hour.
const MaxFunctions = 100

// Arrival is what one signal of one app brought one Fusebox instance in
// one Bucket: running totals, so that writing it again replaces it.
type Arrival struct {
	App      string
	Source   Source
	Bucket   time.Time
	Instance string
	Protocol string // of the last export: grpc, http/protobuf or http/json

	Exports     int
	Records     int // spans or log records
	Invocations int // invocation records that named a function
	Counted     int // invocations counted by the breaker
	Failures    int // of those, failed
	Duplicates  int // invocations another export had counted
	ThroughLogs int // span invocations not counted because the app's logs were (rows written before per-function signals)
	// Outranked counts invocations not counted because a better signal
	// tells of the same function (Signal): the Executed records of a
	// function whose host spans arrive, say.
	Outranked int
	Rejected  int // refused by ingest (too old, no such function…)
	// MissedFailures counts failed Executed records of invocations whose
	// span said they succeeded: the host's spans miss failures.
	MissedFailures int
	// JobRuns counts counted invocations kept as runs of the jobs that
	// name their functions: a timer's runs with no ping.
	JobRuns int
	// Functions are the functions span invocations named, each with the
	// best signal that told of it: what tells the other instances which
	// signal counts a function (ingest.Exports). At most MaxFunctions.
	Functions map[string]Signal
	// Unattributed counts invocation records without a function, by why.
	Unattributed map[string]int
	ServiceNames []string
	Last         time.Time
}

func (a *Arrival) add(b Arrival) {
	a.Protocol = b.Protocol
	a.Exports += b.Exports
	a.Records += b.Records
	a.Invocations += b.Invocations
	a.Counted += b.Counted
	a.Failures += b.Failures
	a.Duplicates += b.Duplicates
	a.ThroughLogs += b.ThroughLogs
	a.Outranked += b.Outranked
	a.MissedFailures += b.MissedFailures
	a.JobRuns += b.JobRuns
	a.Rejected += b.Rejected
	for fn, sig := range b.Functions {
		if have, ok := a.Functions[fn]; ok && have <= sig || !ok && len(a.Functions) >= MaxFunctions {
			continue
		}
		if a.Functions == nil {
			a.Functions = map[string]Signal{}
		}
		a.Functions[fn] = sig
	}
	for why, n := range b.Unattributed {
		if a.Unattributed == nil {
			a.Unattributed = map[string]int{}
		}
		a.Unattributed[why] += n
	}
	for _, n := range b.ServiceNames {
		if !slices.Contains(a.ServiceNames, n) && len(a.ServiceNames) < 8 {
			a.ServiceNames = append(a.ServiceNames, n)
		}
	}
	if b.Last.After(a.Last) {
		a.Last = b.Last
	}
}

// ArrivalStore keeps arrival rows (storage.Arrivals).
type ArrivalStore interface {
	PutArrivals(ctx context.Context, rows []Arrival) error
	ArrivalsOf(ctx context.Context, appID string, from time.Time) ([]Arrival, error)
}

// Arrivals adds up what this instance received, and writes it every few
// seconds: one row per app, signal and bucket, replaced in place.
type Arrivals struct {
	Store    ArrivalStore
	Instance string
	Logger   *slog.Logger

	mu    sync.Mutex
	rows  map[arrivalKey]*Arrival
	dirty map[arrivalKey]bool
}

type arrivalKey struct {
	app    string
	source Source
	bucket time.Time
}

// maxArrivalRows bounds the rows held: apps are few, and every key was
// verified before an export is added.
const maxArrivalRows = 10_000

// Add adds one export's figures.
func (a *Arrivals) Add(x Arrival) {
	x.Bucket = x.Last.UTC().Truncate(Bucket)
	k := arrivalKey{x.App, x.Source, x.Bucket}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rows == nil {
		a.rows, a.dirty = map[arrivalKey]*Arrival{}, map[arrivalKey]bool{}
	}
	row, ok := a.rows[k]
	if !ok {
		// Older buckets are written and no longer added to.
		maps.DeleteFunc(a.rows, func(k arrivalKey, _ *Arrival) bool { return k.bucket.Before(x.Bucket) && !a.dirty[k] })
		if len(a.rows) >= maxArrivalRows {
			return
		}
		row = &Arrival{App: x.App, Source: x.Source, Bucket: x.Bucket, Instance: a.Instance}
		a.rows[k] = row
	}
	row.add(x)
	a.dirty[k] = true
}

// Flush writes the rows that changed since the last flush.
func (a *Arrivals) Flush(ctx context.Context) error {
	a.mu.Lock()
	var rows []Arrival
	for k := range a.dirty {
		r := *a.rows[k]
		r.Unattributed = maps.Clone(r.Unattributed)
		r.ServiceNames = slices.Clone(r.ServiceNames)
		r.Functions = maps.Clone(r.Functions)
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
			a.Logger.Warn("otlp: could not write what arrived; will try again", "error", err)
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
