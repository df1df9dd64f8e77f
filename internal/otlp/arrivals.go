package otlp

import (
	"maps"
	"slices"
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
	// signal counts a function (Seen.HearOthers). At most MaxFunctions.
	Functions map[string]Signal
	// Unattributed counts invocation records without a function, by why.
	Unattributed map[string]int
	ServiceNames []string
	// Calls are the failed calls' targets, each with the traces of the
	// invocations that made them (Dependency): at most MaxTargets, each
	// with at most MaxCallTraces.
	Calls map[string][]string
	Last  time.Time
}

// MaxTargets bounds the targets one arrival row keeps, MaxCallTraces the
// traces kept of each: the bucket's first half and its latest half, so a
// circuit's window that opens or closes within the bucket finds its own.
const (
	MaxTargets    = 20
	MaxCallTraces = 16
)

// AddCall keeps that an invocation of trace called target and failed.
func (a *Arrival) AddCall(target, trace string) {
	traces, ok := a.Calls[target]
	switch {
	case slices.Contains(traces, trace):
		return
	case !ok && len(a.Calls) >= MaxTargets:
		return
	case len(traces) >= MaxCallTraces:
		traces = slices.Delete(slices.Clone(traces), MaxCallTraces/2, MaxCallTraces/2+1)
	}
	if a.Calls == nil {
		a.Calls = map[string][]string{}
	}
	a.Calls[target] = append(traces, trace)
}

// Add adds b's figures to a (the same app, signal and bucket).
func (a *Arrival) Add(b Arrival) {
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
	for _, target := range slices.Sorted(maps.Keys(b.Calls)) {
		for _, trace := range b.Calls[target] {
			a.AddCall(target, trace)
		}
	}
	if b.Last.After(a.Last) {
		a.Last = b.Last
	}
}
