// Package ingest decides where an app's failure reports go. Reports of a
// function with a circuit become failure rows, which the evaluator reads
// every tick; reports of a function without one are useful (they show
// which functions fail and deserve a breaker) but must not slow circuit
// control: they are added to a tally of one row per function and minute,
// and an app may report at most MaxNames such functions an hour. Past
// that, a new name is refused, item by item, so one app key cannot fill
// the store with made-up names.
//
// It promises that what it is given to count is counted or refused, never
// dropped silently; it does not promise that a circuit created less than
// Refresh ago is known: its first reports may land in the tally.
package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
)

// CircuitLister lists every circuit (storage.Circuits, which reads only
// what changed since its last list).
type CircuitLister interface {
	List(ctx context.Context) ([]circuit.Circuit, error)
}

// Tallies add failures to a function's minute (storage.Rates).
type Tallies interface {
	Add(ctx context.Context, appID, function string, minute time.Time, n int) error
}

// Settings of a Router, with their defaults.
type Settings struct {
	// MaxNames is how many functions without a circuit one app may report
	// in a clock hour, on one Fusebox instance; default 50.
	MaxNames int
	// Refresh is how long the list of circuits is reused; default 2s.
	Refresh time.Duration
}

// Router routes reports.
type Router struct {
	circuits CircuitLister
	tallies  Tallies
	settings Settings

	mu       sync.Mutex
	known    map[string]bool // app/function of every circuit
	listedAt time.Time
	hour     time.Time
	names    map[string]map[string]bool // app -> functions without a circuit this hour
}

// New makes a Router.
func New(circuits CircuitLister, tallies Tallies, s Settings) *Router {
	if s.MaxNames <= 0 {
		s.MaxNames = 50
	}
	if s.Refresh <= 0 {
		s.Refresh = 2 * time.Second
	}
	return &Router{circuits: circuits, tallies: tallies, settings: s}
}

// Routed is what became of an app's reports.
type Routed struct {
	Counted []storage.Report // for the failure rows
	// Tallies are the failures of functions without a circuit per function
	// and minute, for Keep.
	Tallies []Tally
	// Refused are the indexes of reports refused, with why.
	Refused map[int]string
}

// Tally is failures of one function without a circuit in one minute.
type Tally struct {
	Function string
	Minute   time.Time
	Failures int
	Items    []int // the indexes of the reports it adds up
}

// Tallied is how many reports the tallies add up.
func (r Routed) Tallied() int {
	n := 0
	for _, t := range r.Tallies {
		n += len(t.Items)
	}
	return n
}

// Route splits reports (all of appID): the caller records Counted, and
// keeps Tallies with Keep (not for a retried request, whose tallies the
// first one kept).
func (r *Router) Route(ctx context.Context, appID string, reports []storage.Report, now time.Time) (Routed, error) {
	known, err := r.circuitsOf(ctx, now)
	if err != nil {
		return Routed{}, err
	}
	out := Routed{Refused: map[int]string{}}
	type minuteKey struct {
		function string
		minute   time.Time
	}
	at := map[minuteKey]int{} // index in out.Tallies
	has := map[string]bool{}  // per function: an export names few, many times
	for i, rep := range reports {
		counted, ok := has[rep.Function]
		if !ok {
			counted = known[appID+"/"+rep.Function]
			has[rep.Function] = counted
		}
		if counted {
			out.Counted = append(out.Counted, rep)
			continue
		}
		if !r.admit(appID, rep.Function, now) {
			out.Refused[i] = fmt.Sprintf("%s has no circuit, and this app already reports %d functions without one this hour: create a circuit for it, or report only functions that have one", rep.Function, r.settings.MaxNames)
			continue
		}
		k := minuteKey{rep.Function, rep.Second.UTC().Truncate(time.Minute)}
		j, ok := at[k]
		if !ok {
			j = len(out.Tallies)
			at[k] = j
			out.Tallies = append(out.Tallies, Tally{Function: k.function, Minute: k.minute})
		}
		out.Tallies[j].Failures += rep.Count
		out.Tallies[j].Items = append(out.Tallies[j].Items, i)
	}
	return out, nil
}

// Keep adds tallies to the app's failures per function and minute, and
// returns those it could not keep: one function's tally row that does not
// read, or a store that does not answer, costs only its own reports.
func (r *Router) Keep(ctx context.Context, appID string, tallies []Tally) (failed []Tally) {
	for _, t := range tallies {
		if t.Failures == 0 {
			continue // successes alone: nothing to tally
		}
		if err := r.tallies.Add(ctx, appID, t.Function, t.Minute, t.Failures); err != nil {
			failed = append(failed, t)
		}
	}
	return failed
}

// circuitsOf is the set of circuits, listed at most every Refresh.
func (r *Router) circuitsOf(ctx context.Context, now time.Time) (map[string]bool, error) {
	r.mu.Lock()
	fresh := r.known != nil && now.Sub(r.listedAt) < r.settings.Refresh && !now.Before(r.listedAt)
	known := r.known
	r.mu.Unlock()
	if fresh {
		return known, nil
	}
	cs, err := r.circuits.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("ingest: list circuits: %w", err)
	}
	known = make(map[string]bool, len(cs))
	for _, c := range cs {
		known[c.AppID+"/"+c.Function] = true
	}
	r.mu.Lock()
	r.known, r.listedAt = known, now
	r.mu.Unlock()
	return known, nil
}

// admit says whether function may be tallied for appID this hour.
func (r *Router) admit(appID, function string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if hour := now.UTC().Truncate(time.Hour); !hour.Equal(r.hour) {
		r.hour, r.names = hour, map[string]map[string]bool{}
	}
	names := r.names[appID]
	if names == nil {
		names = map[string]bool{}
		r.names[appID] = names
	}
	if names[function] {
		return true
	}
	if len(names) >= r.settings.MaxNames {
		return false
	}
	names[function] = true
	return true
}
