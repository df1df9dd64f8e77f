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
	"github.com/fusebox/fusebox/internal/pushback"
	"github.com/fusebox/fusebox/internal/spoken"
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
	known    map[string]bool          // app/function of every circuit
	words    map[string][]string      // app/function -> the words its throttle adds (pushback.Word)
	longest  map[string]time.Duration // app -> its longest circuit window
	listedAt time.Time
	hour     time.Time
	names    map[string]map[string]bool // app -> functions without a circuit this hour
}

// NewRouter makes a Router.
func NewRouter(circuits CircuitLister, tallies Tallies, s Settings) *Router {
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
	Counted []Report // for the failure rows
	// Tallies are the failures of functions without a circuit per function
	// and minute, for Keep.
	Tallies []Tally
	// Refused are the indexes of reports refused, with why.
	Refused map[int]string
	// Rows is what keeping them costs the store: a failure row per
	// function and second, a read and a write per tally.
	Rows int
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
// first one kept). Reports that would need a row past maxRows are refused.
func (r *Router) Route(ctx context.Context, appID string, reports []Report, maxRows int, now time.Time) (Routed, error) {
	known, longest, words, err := r.circuitsOf(ctx, now)
	if err != nil {
		return Routed{}, err
	}
	horizon := max(longest[appID], time.Hour) + HorizonSlack
	out := Routed{Refused: map[int]string{}, Counted: make([]Report, 0, len(reports))}
	type rowKey struct {
		function string
		at       time.Time // a second for a failure row, a minute for a tally
	}
	rows := map[rowKey]bool{}
	at := map[rowKey]int{}   // index in out.Tallies
	has := map[string]bool{} // per function: an export names few, many times
	for i, rep := range reports {
		if rep.Second.Before(now.Add(-horizon)) {
			out.Refused[i] = fmt.Sprintf("at is more than %s ago: older than this app's longest circuit window and %s, it would count toward no circuit", spoken.Duration(horizon), spoken.Duration(HorizonSlack))
			continue
		}
		counted, ok := has[rep.Function]
		if !ok {
			counted = known[appID+"/"+rep.Function]
			has[rep.Function] = counted
		}
		if counted {
			k := rowKey{rep.Function, rep.Second.UTC().Truncate(time.Second)}
			if !rows[k] && len(rows) >= maxRows {
				out.Refused[i] = tooManyRows(maxRows)
				continue
			}
			rows[k] = true
			if len(words) > 0 && rep.Count > 0 && rep.Throttling < rep.Count && rep.Sample != "" {
				// The circuit's own words for its downstream pushing
				// back (the built-in ones were looked for when checked).
				if ws := words[appID+"/"+rep.Function]; ws != nil && pushback.SaysWith(rep.Sample, ws) {
					rep.Throttling = rep.Count
				}
			}
			out.Counted = append(out.Counted, rep)
			continue
		}
		k := rowKey{rep.Function, rep.Second.UTC().Truncate(time.Minute)}
		j, ok := at[k]
		if !ok && len(rows) >= maxRows {
			out.Refused[i] = tooManyRows(maxRows)
			continue
		}
		if !r.admit(appID, rep.Function, now) {
			out.Refused[i] = fmt.Sprintf("%s has no circuit, and this app already reports %d functions without one this hour: create a circuit for it, or report only functions that have one", rep.Function, r.settings.MaxNames)
			continue
		}
		if !ok {
			j = len(out.Tallies)
			at[k] = j
			rows[rowKey{"tally " + k.function, k.at}] = true
			out.Tallies = append(out.Tallies, Tally{Function: k.function, Minute: k.at})
		}
		out.Tallies[j].Failures += rep.Count
		out.Tallies[j].Items = append(out.Tallies[j].Items, i)
	}
	out.Rows = len(rows)
	for _, t := range out.Tallies {
		if t.Failures > 0 {
			out.Rows++ // its read, beside its write
		}
	}
	return out, nil
}

func tooManyRows(n int) string {
	return fmt.Sprintf("this request already writes %d rows (one per function and second, one per function without a circuit and minute): send this item in another request", n)
}

// Keep adds tallies to the app's failures per function and minute, and
// returns those it could not keep: one function's tally row that does not
// read, or a store that does not answer, costs only its own reports.
func (r *Router) Keep(ctx context.Context, appID string, tallies []Tally) (failed []Tally) {
	// Each tally is a read and a write of its own row: kept a few at once,
	// so that a request naming 50 functions spends its storage budget on
	// seven rounds of calls rather than fifty.
	bad := make([]bool, len(tallies))
	slots := make(chan struct{}, keptAtOnce)
	var wg sync.WaitGroup
	for i, t := range tallies {
		if t.Failures == 0 {
			continue // successes alone: nothing to tally
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			bad[i] = r.tallies.Add(ctx, appID, t.Function, t.Minute, t.Failures) != nil
		})
	}
	wg.Wait()
	for i, t := range tallies {
		if bad[i] {
			failed = append(failed, t)
		}
	}
	return failed
}

// keptAtOnce bounds the tallies one request keeps at once.
const keptAtOnce = 8

// circuitsOf is the set of circuits, listed at most every Refresh.
func (r *Router) circuitsOf(ctx context.Context, now time.Time) (map[string]bool, map[string]time.Duration, map[string][]string, error) {
	r.mu.Lock()
	fresh := r.known != nil && now.Sub(r.listedAt) < r.settings.Refresh && !now.Before(r.listedAt)
	known, longest, words := r.known, r.longest, r.words
	r.mu.Unlock()
	if fresh {
		return known, longest, words, nil
	}
	cs, err := r.circuits.List(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ingest: list circuits: %w", err)
	}
	known, longest, words = make(map[string]bool, len(cs)), map[string]time.Duration{}, map[string][]string{}
	for _, c := range cs {
		known[c.AppID+"/"+c.Function] = true
		longest[c.AppID] = max(longest[c.AppID], c.Window)
		if ws := c.Throttle.MatchWords(); len(ws) > 0 && c.Throttle.OnlyThrottling {
			words[c.AppID+"/"+c.Function] = ws
		}
	}
	r.mu.Lock()
	r.known, r.longest, r.words, r.listedAt = known, longest, words, now
	r.mu.Unlock()
	return known, longest, words, nil
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

// Report is a count of failures of one function in one second, as the
// failure rows keep it.
type Report struct {
	App, Function string
	Second        time.Time // truncated to the second
	Count         int       // failures
	Successes     int       // successes, for ratio rules; 0 when not reported
	Sample        string
	// Throttling are the failures among Count whose error text looks like
	// a downstream pushing back (pushback.Says).
	Throttling  int
	TraceParent string // of the report, so the trip it causes joins its trace
	Instance    string // the instance that reported them, as the client named it
	// Via says whether they are counts of Executed log records, which
	// count only where no span tells of the same calls (circuit.Countable).
	Via circuit.Via
}

// MaxSkew is how far ahead of Fusebox's clock a report's second may be:
// further is refused, nearer waits until its second comes.
const MaxSkew = 5 * time.Minute
