package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/trigger"
)

// Arrivals keeps what each Fusebox instance received over OpenTelemetry,
// per app, signal and ten minutes: running totals the instance replaces
// in place, so the Apps page can say what arrived in the last hour and
// whether an app went quiet.
type Arrivals struct {
	table  *tablestore.Table
	faults *Faults
}

type arrivalRow struct {
	tablestore.Meta           // PartitionKey: app id; RowKey: yyyyMMddHHmm|source|instance
	Source          string    // traces or logs
	Bucket          time.Time // the ten minutes' start
	Instance        string    // the Fusebox instance that received it
	Protocol        string
	Exports         int32
	Records         int32
	Invocations     int32
	Counted         int32
	Failures        int32
	Duplicates      int32
	ThroughLogs     int32
	Outranked       int32
	MissedFailures  int32
	JobRuns         int32 // counted invocations kept as runs of jobs
	Rejected        int32
	Functions       string // "<name> <signal>" lines: the span signals per function
	Unattributed    string // JSON: why -> count
	ServiceNames    string // newline-separated
	Calls           string // "<target> <trace> <trace>…" lines: failed calls (otlp.Dependency)
	Last            time.Time
}

// ArrivalRetention is how long arrival rows are kept: long enough to say
// an app used to send.
const ArrivalRetention = 2 * otlp.Expect

// PutArrivals writes rows, replacing what the same instance wrote for
// the same app, signal and bucket.
func (a *Arrivals) PutArrivals(ctx context.Context, rows []otlp.Arrival) error {
	for _, r := range rows {
		why, _ := json.Marshal(r.Unattributed)
		fns := make([]string, 0, len(r.Functions))
		for fn, sig := range r.Functions {
			fns = append(fns, fn+" "+strconv.Itoa(int(sig)))
		}
		slices.Sort(fns)
		calls := make([]string, 0, len(r.Calls))
		for target, traces := range r.Calls {
			calls = append(calls, target+" "+strings.Join(traces, " "))
		}
		slices.Sort(calls)
		row := &arrivalRow{
			Meta:   tablestore.Meta{PartitionKey: r.App, RowKey: FailurePartition(r.Bucket) + "|" + string(r.Source) + "|" + keySafe.Replace(r.Instance)},
			Source: string(r.Source), Bucket: r.Bucket, Instance: r.Instance, Protocol: r.Protocol,
			Exports: clamp32(r.Exports), Records: clamp32(r.Records), Invocations: clamp32(r.Invocations), Counted: clamp32(r.Counted),
			Failures: clamp32(r.Failures), Duplicates: clamp32(r.Duplicates), ThroughLogs: clamp32(r.ThroughLogs), Rejected: clamp32(r.Rejected),
			Outranked: clamp32(r.Outranked), MissedFailures: clamp32(r.MissedFailures), JobRuns: clamp32(r.JobRuns), Functions: strings.Join(fns, "\n"), Unattributed: string(why), ServiceNames: truncate(strings.Join(r.ServiceNames, "\n"), 2048), Calls: strings.Join(calls, "\n"), Last: r.Last,
		}
		if err := a.table.Upsert(ctx, row); err != nil {
			return fmt.Errorf("storage: arrivals of %s: %w", r.App, err)
		}
	}
	return nil
}

// keySafe replaces what Table Storage refuses in keys.
var keySafe = strings.NewReplacer("/", "_", `\`, "_", "#", "_", "?", "_")

func clamp32(n int) int32 { return int32(min(n, 1<<31-1)) }

// ArrivalsOf returns an app's rows of buckets that end after from. A row
// that does not read is skipped and listed with the other unreadable rows
// on the overview: it only describes what arrived.
func (a *Arrivals) ArrivalsOf(ctx context.Context, appID string, from time.Time) ([]otlp.Arrival, error) {
	out, _, err := a.arrivalsOf(ctx, appID, from)
	return out, err
}

// SignalsOf is ArrivalsOf for what the rows tell of the functions'
// signals: whole is false when a row was skipped, since the functions it
// named spans of are then unknown (otlp.Seen.HearOthers).
func (a *Arrivals) SignalsOf(ctx context.Context, appID string, from time.Time) (rows []otlp.Arrival, whole bool, err error) {
	return a.arrivalsOf(ctx, appID, from)
}

func (a *Arrivals) arrivalsOf(ctx context.Context, appID string, from time.Time) ([]otlp.Arrival, bool, error) {
	f := tablestore.And(tablestore.PartitionIs(appID), tablestore.Ge("RowKey", FailurePartition(from.UTC().Truncate(otlp.Bucket))))
	// Failed calls that do not read cost only themselves: the row's
	// counts, and the functions it tells other instances of, still count.
	var partial []Fault
	out, faults, err := readRows(ctx, a.table, tablestore.Query{Filter: f}, TableArrivals, func(row arrivalRow) (otlp.Arrival, error) {
		x, err := openArrival(row)
		if err != nil {
			return x, err
		}
		if x.Calls, err = openCalls(row.Calls); err != nil {
			partial = append(partial, Fault{Table: TableArrivals, Key: rowKey(row), Problem: err.Error() + "; the row is read without them", Seen: time.Now()})
		}
		return x, nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("storage: arrivals of %s: %w", appID, err)
	}
	a.faults.Add(append(faults, partial...)...)
	return out, len(faults) == 0, nil
}

func openArrival(row arrivalRow) (otlp.Arrival, error) {
	x := otlp.Arrival{App: row.PartitionKey, Source: otlp.Source(row.Source), Bucket: row.Bucket, Instance: row.Instance, Protocol: row.Protocol,
		Exports: int(row.Exports), Records: int(row.Records), Invocations: int(row.Invocations), Counted: int(row.Counted),
		Failures: int(row.Failures), Duplicates: int(row.Duplicates), ThroughLogs: int(row.ThroughLogs), Rejected: int(row.Rejected), Outranked: int(row.Outranked), MissedFailures: int(row.MissedFailures), JobRuns: int(row.JobRuns), Last: row.Last}
	if x.Source != otlp.Traces && x.Source != otlp.Logs {
		return otlp.Arrival{}, fmt.Errorf("the source %q must be traces or logs", row.Source)
	}
	if min(row.Exports, row.Records, row.Invocations, row.Counted, row.Failures, row.Duplicates, row.ThroughLogs, row.Rejected, row.Outranked, row.MissedFailures, row.JobRuns) < 0 {
		return otlp.Arrival{}, errors.New("counts must not be negative")
	}
	if err := json.Unmarshal([]byte(row.Unattributed), &x.Unattributed); row.Unattributed != "" && err != nil {
		return otlp.Arrival{}, errors.New("the unattributed counts must be a JSON object")
	}
	if len(row.Functions) > otlp.MaxFunctions*(trigger.MaxNameLength+3) {
		return otlp.Arrival{}, errors.New("the functions list is longer than any instance writes")
	}
	for line := range strings.SplitSeq(row.Functions, "\n") {
		if line == "" {
			continue
		}
		fn, sig, _ := strings.Cut(line, " ")
		n, err := strconv.Atoi(sig)
		if !trigger.ValidName(fn) || err != nil || (n < int(otlp.HostSpan) || n > int(otlp.WorkerSpan)) && n != int(otlp.RecordsShowSuccesses) {
			return otlp.Arrival{}, fmt.Errorf("the functions list has a line %q that is no function and span signal (or 4: its records show successes)", truncate(line, 80))
		}
		if x.Functions == nil {
			x.Functions = map[string]otlp.Signal{}
		}
		x.Functions[fn] = otlp.Signal(n)
	}
	if row.ServiceNames != "" {
		x.ServiceNames = strings.Split(row.ServiceNames, "\n")
	}
	return x, nil
}

// maxCallsText bounds the calls a row may hold: as many targets and
// traces as an instance keeps, each at its longest.
const maxCallsText = otlp.MaxTargets * (otlp.MaxTarget + otlp.MaxCallTraces*33 + 1)

// openCalls reads the failed calls' lines, checked as an instance writes
// them: targets as otlp keeps them, each with 1 to MaxCallTraces trace ids.
func openCalls(text string) (map[string][]string, error) {
	if text == "" {
		return nil, nil
	}
	if len(text) > maxCallsText {
		return nil, errors.New("the failed calls are longer than any instance writes")
	}
	calls := map[string][]string{}
	for line := range strings.SplitSeq(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > otlp.MaxCallTraces+1 || !otlp.ValidTarget(f[0]) || len(calls) >= otlp.MaxTargets {
			return nil, fmt.Errorf("the failed calls have a line %q that is no target and its traces", truncate(line, 80))
		}
		for _, trace := range f[1:] {
			if !traceID.MatchString(trace) {
				return nil, fmt.Errorf("the failed calls of %s name %q, which is no trace id", f[0], truncate(trace, 40))
			}
		}
		calls[f[0]] = f[1:]
	}
	return calls, nil
}

var traceID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// DeleteBefore removes rows last written before t.
func (a *Arrivals) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	return deleteMatching(ctx, a.table, tablestore.Lt("Last", t))
}
