package circuit

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Tally is the breaker's state for metrics: circuits by state, the ones
// not closed, and running totals of trips, resumes and trigger switches.
// The keeper of the evaluator's books stores it, so every instance exports
// the same figures whichever one a scrape reaches, and a new keeper
// carries the totals on. Switch calls are counted per instance instead
// (Evaluator.Applies).
type Tally struct {
	At        time.Time
	ByState   map[string]map[string]int   // app -> state -> circuits
	NotClosed []NotClosed                 // at most MaxNotClosed, oldest change first
	Trips     map[string]map[string]int64 // app -> actor kind -> trips
	Resumes   map[string]map[string]int64 // app -> actor kind -> resumes
	// Applies counts switch calls by switch kind and outcome (ok, error);
	// ApplySeconds is their latency, as cumulative counts per bucket of
	// ApplyBuckets, with the sum.
	Applies      map[string]map[string]int64
	ApplyLatency map[string]*Histogram
	// Counted names the flips (app/function#episode) made within the
	// books' look-back before At that these totals hold, so a new keeper
	// looking back as far counts each of them neither twice nor not at all.
	Counted []string `json:",omitempty"`
}

// NotClosed is a circuit whose trigger is off or on trial.
type NotClosed struct {
	App, Function, State string
	Since                time.Time
}

// MaxNotClosed bounds the per-circuit series: a storm that opens thousands
// of circuits must not blow up the scrape.
const MaxNotClosed = 200

// Actor kinds of transitions.
const (
	ActorEvaluator = "evaluator"
	ActorOperator  = "operator"
	ActorLink      = "link"
)

// ActorKind sorts a flip's actor into evaluator, link or operator.
func ActorKind(actor string) string {
	switch {
	case actor == EvaluatorActor:
		return ActorEvaluator
	case strings.HasPrefix(actor, "resume link:") || strings.Contains(actor, "(resume link sent to"):
		return ActorLink
	}
	return ActorOperator
}

// ApplyBuckets are the upper bounds, in seconds, of the apply-latency histogram.
var ApplyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Histogram is a cumulative histogram over ApplyBuckets.
type Histogram struct {
	Counts []uint64 // per bucket, cumulative
	Count  uint64
	Sum    float64
}

// Observe adds one sample.
func (h *Histogram) Observe(seconds float64) {
	if len(h.Counts) != len(ApplyBuckets) {
		h.Counts = make([]uint64, len(ApplyBuckets))
	}
	for i, le := range ApplyBuckets {
		if seconds <= le {
			h.Counts[i]++
		}
	}
	h.Count++
	h.Sum += seconds
}

// NewTally is an empty tally.
func NewTally() Tally {
	return Tally{ByState: map[string]map[string]int{}, Trips: map[string]map[string]int64{}, Resumes: map[string]map[string]int64{},
		Applies: map[string]map[string]int64{}, ApplyLatency: map[string]*Histogram{}}
}

func (t *Tally) fill() {
	if t.ByState == nil || t.Trips == nil || t.Resumes == nil || t.Applies == nil || t.ApplyLatency == nil {
		n := NewTally()
		if t.Trips != nil {
			n.Trips = t.Trips
		}
		if t.Resumes != nil {
			n.Resumes = t.Resumes
		}
		if t.Applies != nil {
			n.Applies = t.Applies
		}
		if t.ApplyLatency != nil {
			n.ApplyLatency = t.ApplyLatency
		}
		n.At, n.NotClosed = t.At, t.NotClosed
		*t = n
	}
}

func add(m map[string]map[string]int64, a, b string, n int64) {
	if m[a] == nil {
		m[a] = map[string]int64{}
	}
	m[a][b] += n
}

// Count records a transition into to by actor.
func (t *Tally) Count(app string, to State, actor string) {
	t.fill()
	switch to {
	case Open, ForcedOpen:
		add(t.Trips, app, ActorKind(actor), 1)
	case Closed:
		add(t.Resumes, app, ActorKind(actor), 1)
	}
}

// CountApply records a switch call.
func (t *Tally) CountApply(kind SwitchKind, err error, took time.Duration) {
	t.fill()
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	add(t.Applies, string(kind), outcome, 1)
	h := t.ApplyLatency[string(kind)]
	if h == nil {
		h = &Histogram{}
		t.ApplyLatency[string(kind)] = h
	}
	h.Observe(took.Seconds())
}

// Settle sets the state figures from the circuits as they stand now.
func (t *Tally) Settle(circuits []Circuit, now time.Time) {
	t.fill()
	t.At, t.ByState, t.NotClosed = now, map[string]map[string]int{}, nil
	for _, c := range circuits {
		if t.ByState[c.AppID] == nil {
			t.ByState[c.AppID] = map[string]int{}
		}
		t.ByState[c.AppID][c.State.String()]++
		if c.State != Closed && len(t.NotClosed) < MaxNotClosed {
			t.NotClosed = append(t.NotClosed, NotClosed{App: c.AppID, Function: c.Function, State: c.State.String(), Since: c.ChangedAt})
		}
	}
}

// Clone copies t deeply, so it can be stored while switch calls go on
// counting into the original.
func (t Tally) Clone() Tally {
	c := t
	c.ByState, c.Trips, c.Resumes, c.Applies = cloneNested(t.ByState), cloneNested(t.Trips), cloneNested(t.Resumes), cloneNested(t.Applies)
	c.NotClosed, c.Counted = slices.Clone(t.NotClosed), slices.Clone(t.Counted)
	if t.ApplyLatency != nil {
		c.ApplyLatency = make(map[string]*Histogram, len(t.ApplyLatency))
		for k, h := range t.ApplyLatency {
			if h != nil {
				hc := *h
				hc.Counts = slices.Clone(h.Counts)
				h = &hc
			}
			c.ApplyLatency[k] = h
		}
	}
	return c
}

func cloneNested[V any](m map[string]map[string]V) map[string]map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]V, len(m))
	for k, v := range m {
		out[k] = maps.Clone(v)
	}
	return out
}
