package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/otlp"
)

// This file counts what function hosts export over OpenTelemetry: the
// invocations otlp maps from an export become items of a Batch, like any
// other report.

// Export is one decoded export request of an app whose key verified.
type Export struct {
	AppID    string
	Protocol string
	Mapped   otlp.Mapped
}

// Answer is what the exporter is told: OTLP's partial success.
type Answer struct {
	Rejected int    // spans or log records refused
	Message  string // why, for the exporter's log
}

// Telemetry counts what apps export.
type Telemetry struct {
	Reports  *Service
	Seen     *otlp.Seen
	Arrivals *otlp.Arrivals
	Now      func() time.Time

	mu   sync.Mutex
	logs map[string]time.Time // app -> last "Executed" records, on any instance
	read map[string]time.Time // app -> when the rows were last read for it
}

// logsCount says whether an app's invocations are counted from its log
// records, which the host has written for longer and more steadily than
// spans: an app that exports both would otherwise count each invocation
// twice when its two exports reach two Fusebox instances. What this
// instance saw decides at once; the rows of other instances are read at
// most every 30 s.
func (r *Telemetry) logsCount(ctx context.Context, appID string, now time.Time) bool {
	r.mu.Lock()
	last, readAt := r.logs[appID], r.read[appID]
	r.mu.Unlock()
	if now.Sub(last) < otlp.Quiet {
		return true
	}
	if r.Arrivals == nil || r.Arrivals.Store == nil || now.Sub(readAt) < 30*time.Second {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := r.Arrivals.Store.ArrivalsOf(ctx, appID, now.Add(-otlp.Quiet))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read = setBounded(r.read, appID, now)
	if err != nil {
		return false // count the spans: a double count is better than none
	}
	for _, row := range rows {
		if row.Source == otlp.Logs && row.Invocations > 0 && row.Last.After(r.logs[appID]) {
			r.logs = setBounded(r.logs, appID, row.Last)
		}
	}
	return now.Sub(r.logs[appID]) < otlp.Quiet
}

// maxApps bounds the apps remembered; every app was named by a verified key.
const maxApps = 10_000

func setBounded(m map[string]time.Time, k string, v time.Time) map[string]time.Time {
	if m == nil || len(m) >= maxApps {
		m = map[string]time.Time{}
	}
	m[k] = v
	return m
}

// Take counts an export. An error wraps ingest.ErrUnavailable: nothing
// was kept and the exporter should send it again.
func (r *Telemetry) Take(ctx context.Context, e Export) (Answer, error) {
	now := r.Now()
	m := e.Mapped
	got := otlp.Arrival{App: e.AppID, Source: m.Source, Protocol: e.Protocol, Exports: 1, Records: m.Records,
		Invocations: len(m.Invocations), Unattributed: m.Unattributed, ServiceNames: m.ServiceNames, Last: now}
	// The export's key: the same invocations sent again (a retry) are
	// written under the same writer, their rows replaced.
	key := m.Key()
	invs := m.Invocations
	if m.ExecutedLogs {
		r.mu.Lock()
		r.logs = setBounded(r.logs, e.AppID, now)
		r.mu.Unlock()
	}
	if m.Source == otlp.Traces && len(invs) > 0 && r.logsCount(ctx, e.AppID, now) {
		got.ThroughLogs, invs = len(invs), nil
	}
	invs, got.Duplicates = r.Seen.Fresh(e.AppID, key, invs, now)
	var ans Answer
	if len(invs) > 0 {
		res, err := r.Reports.Take(ctx, batch(e.AppID, key, invs))
		if err != nil {
			return Answer{}, err
		}
		r.Seen.Counted(e.AppID, key, invs, now)
		got.Counted, got.Failures, got.Rejected = res.Accepted, res.Failures, len(res.Rejected)
		if len(res.Rejected) > 0 {
			ans = Answer{Rejected: len(res.Rejected), Message: fmt.Sprintf("%d invocations refused; the first: %s", len(res.Rejected), res.Rejected[0].Error)}
		}
	}
	r.Arrivals.Add(got)
	return ans, nil
}

func batch(appID, key string, invs []otlp.Invocation) Batch {
	one := 1
	b := Batch{AppID: appID, Items: make([]Item, len(invs)), Content: "otlp." + key}
	for i, inv := range invs {
		it := Item{Function: inv.Function, At: inv.At, Instance: inv.Instance}
		if inv.Failed {
			it.Count, it.Sample = &one, inv.Sample
		} else {
			it.Successes = &one
		}
		b.Items[i] = it
	}
	return b
}
