package metrics

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
)

// State is what the lease holders stored about the breaker and the jobs:
// the evaluator's status with its tally, and the scanner's tally.
type State struct {
	Evaluator circuit.Status
	Jobs      jobs.Tally
}

// StateSource reads the stored State.
type StateSource func(ctx context.Context) (State, error)

var (
	descCircuits     = prometheus.NewDesc("fusebox_circuits", "Circuits by app and state.", []string{"app", "state"}, nil)
	descCircuitOpen  = prometheus.NewDesc("fusebox_circuit_state_seconds", "Seconds since each circuit that is not closed changed state (one series per such circuit, gone when it closes).", []string{"app", "function", "state"}, nil)
	descTrips        = prometheus.NewDesc("fusebox_circuit_trips_total", "Circuits opened, by app and actor kind (evaluator, operator).", []string{"app", "actor"}, nil)
	descResumes      = prometheus.NewDesc("fusebox_circuit_resumes_total", "Circuits closed again, by app and actor kind (evaluator, operator, link).", []string{"app", "actor"}, nil)
	descApplies      = prometheus.NewDesc("fusebox_trigger_applies_total", "Calls that switched triggers, by switch kind (arm, local) and outcome (ok, error).", []string{"switch", "outcome"}, nil)
	descApplyTime    = prometheus.NewDesc("fusebox_trigger_apply_duration_seconds", "Time of calls that switched triggers, by switch kind.", []string{"switch"}, nil)
	descJobs         = prometheus.NewDesc("fusebox_jobs", "Jobs by status.", []string{"status"}, nil)
	descJobDown      = prometheus.NewDesc("fusebox_job_down", "1 for each job that is missing or failing (one series per such job; job_slug is its slug, else its name).", []string{"job_slug", "name", "status"}, nil)
	descLastTick     = prometheus.NewDesc("fusebox_evaluator_last_tick_timestamp_seconds", "Unix time at which the evaluator's last finished tick started.", nil, nil)
	descTickDuration = prometheus.NewDesc("fusebox_evaluator_tick_duration_seconds", "Duration of the evaluator's last finished tick.", nil, nil)
	descStateUp      = prometheus.NewDesc("fusebox_state_up", "1 when this instance could read the stored state behind the fusebox_circuit* and fusebox_job* families at this scrape.", nil, nil)
)

// WatchState exports the breaker's and the jobs' state at each scrape,
// read from storage (at most every two seconds), so every instance
// answers alike.
func (m *Metrics) WatchState(src StateSource, now func() time.Time) {
	m.Registry.MustRegister(&stateCollector{src: src, now: now})
}

type stateCollector struct {
	src StateSource
	now func() time.Time

	mu     sync.Mutex
	cached State
	err    error
	readAt time.Time
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCircuits, descCircuitOpen, descTrips, descResumes, descApplies, descApplyTime, descJobs, descJobDown, descLastTick, descTickDuration, descStateUp} {
		ch <- d
	}
}

func (c *stateCollector) read() (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.readAt) < 2*time.Second {
		return c.cached, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.cached, c.err = c.src(ctx)
	c.readAt = time.Now()
	return c.cached, c.err
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descStateUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descStateUp, prometheus.GaugeValue, 1)
	now := c.now()
	t := st.Evaluator.Tally
	for app, byState := range t.ByState {
		for _, s := range circuit.States {
			ch <- prometheus.MustNewConstMetric(descCircuits, prometheus.GaugeValue, float64(byState[s.String()]), app, s.String())
		}
	}
	for _, o := range t.NotClosed {
		ch <- prometheus.MustNewConstMetric(descCircuitOpen, prometheus.GaugeValue, max(now.Sub(o.Since).Seconds(), 0), o.App, o.Function, o.State)
	}
	counters(ch, descTrips, t.Trips)
	counters(ch, descResumes, t.Resumes)
	counters(ch, descApplies, t.Applies)
	for kind, h := range t.ApplyLatency {
		buckets := make(map[float64]uint64, len(circuit.ApplyBuckets))
		for i, le := range circuit.ApplyBuckets {
			if i < len(h.Counts) {
				buckets[le] = h.Counts[i]
			}
		}
		ch <- prometheus.MustNewConstHistogram(descApplyTime, h.Count, h.Sum, buckets, kind)
	}
	if !st.Evaluator.LastTickAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(descLastTick, prometheus.GaugeValue, float64(st.Evaluator.LastTickAt.UnixMilli())/1000)
		ch <- prometheus.MustNewConstMetric(descTickDuration, prometheus.GaugeValue, st.Evaluator.TickDuration.Seconds())
	}
	statuses := make([]string, 0, len(st.Jobs.ByStatus))
	for s := range st.Jobs.ByStatus {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(st.Jobs.ByStatus[s]), s)
	}
	for _, d := range st.Jobs.Down {
		ch <- prometheus.MustNewConstMetric(descJobDown, prometheus.GaugeValue, 1, d.Label, d.Name, d.Status)
	}
}

func counters(ch chan<- prometheus.Metric, d *prometheus.Desc, m map[string]map[string]int64) {
	for a, inner := range m {
		for b, n := range inner {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), a, b)
		}
	}
}
