// Package metrics defines Fusebox's Prometheus metrics in one registry that
// is passed to whoever records them; there are no global collectors.
package metrics

import (
	"errors"
	"github.com/fusebox/fusebox/internal/buildinfo"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/fusebox/fusebox/internal/tablestore"
)

// Metrics holds every collector.
type Metrics struct {
	Registry *prometheus.Registry

	httpRequests  *prometheus.CounterVec
	notifications *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	storageCalls  *prometheus.CounterVec
	storageTime   *prometheus.HistogramVec
	loopRuns      *prometheus.CounterVec
	loopLastOK    *prometheus.GaugeVec
	loopLastErr   *prometheus.GaugeVec
	leaseGained   *prometheus.CounterVec
	leaseLost     *prometheus.CounterVec
	leaseRenew    *prometheus.HistogramVec
	leaseFailed   *prometheus.CounterVec
	ingested      *prometheus.CounterVec
	unverified    *prometheus.CounterVec
	otlpLast      *prometheus.GaugeVec
	otlpExports   *prometheus.CounterVec
	replayEvents  *prometheus.CounterVec
}

// New registers every collector, with the Go runtime's and the process's.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_http_requests_total", Help: "HTTP requests served, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fusebox_http_request_duration_seconds", Help: "Time to serve HTTP requests, by route pattern and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		storageCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_storage_calls_total", Help: "Calls to Table Storage, by operation and outcome (ok, not_found, conflict, exists, error).",
		}, []string{"op", "outcome"}),
		storageTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fusebox_storage_call_duration_seconds", Help: "Time of calls to Table Storage, by operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		loopRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_loop_runs_total", Help: "Passes of background loops, by loop and outcome (ok, error).",
		}, []string{"loop", "outcome"}),
		loopLastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fusebox_loop_last_success_timestamp_seconds", Help: "Unix time of each background loop's last successful pass.",
		}, []string{"loop"}),
		loopLastErr: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fusebox_loop_last_error_timestamp_seconds", Help: "Unix time of each background loop's last failed pass (absent until one fails).",
		}, []string{"loop"}),
		leaseGained: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_lease_acquired_total", Help: "Leases this instance acquired, by lease family (the name up to its first '/').",
		}, []string{"lease"}),
		leaseLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_lease_lost_total", Help: "Leases this instance lost without releasing them, by lease family.",
		}, []string{"lease"}),
		leaseRenew: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fusebox_lease_renew_duration_seconds", Help: "Time of lease renewals, by lease family.",
			Buckets: []float64{.0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"lease"}),
		leaseFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_lease_renew_failures_total", Help: "Lease renewals that failed, by lease family.",
		}, []string{"lease"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_notifications_total", Help: "Alert deliveries this instance attempted, by channel kind (mail, teams, slack, webhook) and outcome (sent, retried, failed).",
		}, []string{"kind", "outcome"}),
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_failures_ingested_total", Help: "Failures reported over HTTP, by outcome (accepted counts failures, rejected counts items).",
		}, []string{"outcome"}),
		unverified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_ingest_unverified_total", Help: "Failure reports refused before they counted for any app, by reason: malformed (no app key), unknown (a key that does not verify), limited (too many unverified keys from one client).",
		}, []string{"reason"}),
		otlpLast: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fusebox_otlp_last_export_timestamp_seconds", Help: "Unix time of the last OpenTelemetry export this instance took, by app (a verified key's) and signal (traces, logs). Alert on max by (app) over instances older than 10 minutes.",
		}, []string{"app", "signal"}),
		otlpExports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_otlp_exports_total", Help: "OpenTelemetry exports this instance took, by signal (traces, logs, metrics) and protocol (grpc, http/protobuf, http/json).",
		}, []string{"signal", "protocol"}),
		replayEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fusebox_replay_events_total", Help: "Events of Event Hubs functions that the failures before a trip skipped, by what became of them: put back in front of the function by a resume from before the first failure (replayed), or lost for good (past the hub's retention, the partition in use, or the circuit resumed where it stopped, counted as every event after the first failure: an upper bound).",
		}, []string{"outcome"}),
	}
	m.replayEvents.WithLabelValues("replayed")
	m.replayEvents.WithLabelValues("lost")
	for _, reason := range []string{"malformed", "unknown", "limited"} {
		m.unverified.WithLabelValues(reason)
	}
	// Every kind and outcome starts at zero, so that rate() and alert rules
	// see a series before the first delivery.
	for _, kind := range []string{"mail", "teams", "slack", "webhook"} {
		for _, outcome := range []string{"sent", "retried", "failed"} {
			m.notifications.WithLabelValues(kind, outcome)
		}
	}
	m.Registry.MustRegister(m.replayEvents, m.otlpLast, m.otlpExports, m.notifications, m.ingested, m.unverified, m.httpRequests, m.httpDuration, m.storageCalls, m.storageTime, m.loopRuns, m.loopLastOK, m.loopLastErr,
		m.leaseGained, m.leaseLost, m.leaseRenew, m.leaseFailed,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	return m
}

// ObserveNotification counts one delivery attempt's outcome.
func (m *Metrics) ObserveNotification(kind, outcome string) {
	m.notifications.WithLabelValues(kind, outcome).Inc()
}

// ObserveHTTP records one served request.
func (m *Metrics) ObserveHTTP(route, method string, code int, elapsed time.Duration) {
	method = Method(method)
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(elapsed.Seconds())
}

// Method is the label of an HTTP method: one of the standard ones, or
// OTHER. A request names its method freely, and every distinct label value
// is a series kept for the life of the process.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// ObserveStorage is a tablestore.Observer. The table is left out of the
// labels: prefixes would multiply series without telling operators more.
func (m *Metrics) ObserveStorage(op, _ string, elapsed time.Duration, err error) {
	m.storageCalls.WithLabelValues(op, outcome(err)).Inc()
	m.storageTime.WithLabelValues(op).Observe(elapsed.Seconds())
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, tablestore.ErrNotFound):
		return "not_found"
	case errors.Is(err, tablestore.ErrConflict):
		return "conflict"
	case errors.Is(err, tablestore.ErrExists):
		return "exists"
	}
	return "error"
}

// ObserveUnverified records a failure report refused before its key
// verified: reason is malformed, unknown or limited.
func (m *Metrics) ObserveUnverified(reason string) {
	m.unverified.WithLabelValues(reason).Inc()
}

// ObserveReplay records what one resume from before the first failure
// replayed and lost.
func (m *Metrics) ObserveReplay(replayed, lost int64) {
	m.replayEvents.WithLabelValues("replayed").Add(float64(replayed))
	m.replayEvents.WithLabelValues("lost").Add(float64(lost))
}

// ObserveIngest records one failure report request.
func (m *Metrics) ObserveIngest(accepted, rejected int) {
	m.ingested.WithLabelValues("accepted").Add(float64(accepted))
	m.ingested.WithLabelValues("rejected").Add(float64(rejected))
}

// ObserveOTLP records an export taken for a verified app.
func (m *Metrics) ObserveOTLP(app, signal, protocol string, at time.Time) {
	m.otlpExports.WithLabelValues(signal, protocol).Inc()
	if signal != "metrics" {
		m.otlpLast.WithLabelValues(app, signal).Set(float64(at.Unix()))
	}
}

// ObserveLoop records one pass of a background loop.
func (m *Metrics) ObserveLoop(loop string, at time.Time, err error) {
	if err != nil {
		m.loopRuns.WithLabelValues(loop, "error").Inc()
		m.loopLastErr.WithLabelValues(loop).Set(float64(at.Unix()))
		return
	}
	m.loopRuns.WithLabelValues(loop, "ok").Inc()
	m.loopLastOK.WithLabelValues(loop).Set(float64(at.Unix()))
}

// Leases returns the observer a lease.Locker reports to. Per-item leases
// ("orders/100") are counted under their family ("orders"), so the number
// of series stays bounded.
func (m *Metrics) Leases() LeaseObserver { return LeaseObserver{m} }

// LeaseObserver implements lease.Observer.
type LeaseObserver struct{ m *Metrics }

func family(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}

func (o LeaseObserver) Acquired(name string) { o.m.leaseGained.WithLabelValues(family(name)).Inc() }
func (o LeaseObserver) Lost(name string)     { o.m.leaseLost.WithLabelValues(family(name)).Inc() }
func (o LeaseObserver) Renewed(name string, elapsed time.Duration, err error) {
	o.m.leaseRenew.WithLabelValues(family(name)).Observe(elapsed.Seconds())
	if err != nil {
		o.m.leaseFailed.WithLabelValues(family(name)).Inc()
	}
}

// WatchUnreadableRows exports, per table, how many stored rows this
// instance could not read (fusebox_unreadable_rows), asking counts at
// each scrape.
func (m *Metrics) WatchUnreadableRows(counts func() map[string]int) {
	m.Registry.MustRegister(gauges{unreadableDesc, counts})
}

var unreadableDesc = prometheus.NewDesc("fusebox_unreadable_rows", "Stored rows this instance could not read and skips, by table.", []string{"table"}, nil)

// gauges is one gauge family of one label, its values asked at each scrape.
type gauges struct {
	desc   *prometheus.Desc
	counts func() map[string]int
}

func (g gauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }
func (g gauges) Collect(ch chan<- prometheus.Metric) {
	for label, n := range g.counts() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n), label)
	}
}

// WatchUnguarded exports, per app, the event-driven functions ARM lists
// that no circuit guards (fusebox_unguarded_functions), from this
// instance's last drift check, asking counts at each scrape.
func (m *Metrics) WatchUnguarded(counts func() map[string]int) {
	m.Registry.MustRegister(gauges{unguardedDesc, counts})
}

var unguardedDesc = prometheus.NewDesc("fusebox_unguarded_functions", "Event-driven functions of each app switched through ARM that no circuit guards, as this instance last checked (every 10 minutes).", []string{"app"}, nil)

// buildInfo is fusebox_build_info: 1, labelled with what `fusebox version`
// prints, so a dashboard says which build each instance runs.
func buildInfo() prometheus.Collector {
	i := buildinfo.Get()
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "fusebox_build_info",
		Help:        "1, labelled with the version, commit and Go version of this instance's build (as fusebox version prints them).",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.Commit, "goversion": i.GoVersion},
	}, func() float64 { return 1 })
}
