package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/pushback"
	"github.com/fusebox/fusebox/internal/trigger"
)

// This file is where failure reports become rows, whatever carried them.
// A report over the HTTP API is untrusted: each item is checked once, on
// its own (valid ones are kept, invalid ones refused by index), and a
// retried request with the same Idempotency-Key writes the very same rows.
// An OpenTelemetry export arrives as reports already in this shape
// (exports.go). Both are then routed and kept the same way, and nothing is
// answered as kept before it is.

// Item is one item of a report over the HTTP API, as the transport decoded
// it: untrusted until check has read it.
type Item struct {
	App       string // optional; must be the key's app
	Function  string
	At        time.Time // zero: the request's time
	Count     *int      // nil: 1, or 0 when Successes is given
	Successes *int
	Sample    string
	Instance  string // the instance that ran it, if not the batch's
	// TraceParent is the W3C traceparent of the run that failed, if not
	// the batch's (an OpenTelemetry span's own).
	TraceParent string
	// Problem is why the transport could not read the item (a field of
	// the wrong type); such an item is refused with it.
	Problem string
}

// Batch is one request's items, all from one app whose key was verified.
type Batch struct {
	AppID          string
	Items          []Item
	Instance       string // for people (which instance fails?), never a key
	TraceParent    string
	IdempotencyKey string // "" for none
}

// Rejection is one refused item, by its index in the batch.
type Rejection struct {
	Index int    `json:"index"`
	Error string `json:"error"`
}

// Result is what became of a batch.
type Result struct {
	Accepted  int         `json:"accepted"`  // items kept
	Failures  int         `json:"failures"`  // failures they count
	Successes int         `json:"successes"` // successes they count
	Rejected  []Rejection `json:"rejected"`
	// NoCircuit counts the accepted items of functions without a circuit:
	// kept as failures per minute, shown on the Apps page, not counted by
	// any circuit.
	NoCircuit int `json:"no_circuit"`
}

var (
	// ErrIdempotencyKey is a key that is not 1 to 255 printable ASCII.
	ErrIdempotencyKey = errors.New("ingest: Idempotency-Key must be 1 to 255 printable ASCII characters, such as a UUID")
	// ErrUnavailable is storage not taking the batch: nothing was kept,
	// and the sender should retry.
	ErrUnavailable = errors.New("ingest: storage is not answering; nothing was stored")
)

// idempotencyKey is what a client may send so that a retried request is
// counted once: printable ASCII, as Stripe's and the IETF draft's keys are.
var idempotencyKey = regexp.MustCompile(`^[\x21-\x7e]{1,255}$`)

// The limits of one item.
const (
	MaxCount     = 100_000
	MaxSuccesses = 1_000_000
	MaxAge       = 24 * time.Hour
)

// Recorder writes failure rows (storage.Failures).
type Recorder interface {
	Record(ctx context.Context, writer string, reports []Report) error
}

// Claims remember Idempotency-Keys: the first claim's time, for a key
// claimed before (storage.Store).
type Claims interface {
	ClaimIdempotency(ctx context.Context, hash string, at time.Time) (time.Time, error)
}

// Service takes failure reports.
type Service struct {
	Router   *Router
	Failures Recorder
	Claims   Claims
	Now      func() time.Time
	// Writer names the rows of one request that has no Idempotency-Key:
	// an id no other request uses, so two requests never replace each
	// other's rows.
	Writer func() string
	// Budget, if set, bounds the rows each app's requests write per
	// second, whatever their number; past it a request keeps nothing and
	// Take says ErrRowBudget.
	Budget *RowBudget
	// Stored, if set, is told of the counts just kept, before the answer
	// goes out, in the evaluator's terms (circuit.Evaluator.CheckReported):
	// it checks at once the circuits they may trip.
	Stored func([]circuit.Reported)
}

// Take checks, routes and keeps a batch. A Result with nothing accepted
// is a refusal of every item; an error wrapping ErrUnavailable means
// nothing was kept.
func (s *Service) Take(ctx context.Context, b Batch) (Result, error) {
	now := s.Now()
	w := writing{maxRows: MaxRows}
	if b.IdempotencyKey == "" {
		w.writer = s.Writer()
	} else {
		if !idempotencyKey.MatchString(b.IdempotencyKey) {
			return Result{}, ErrIdempotencyKey
		}
		// With a key, the rows' writer derives from it, and items
		// without a time take the first request's: a retry writes the
		// very same rows again.
		sum := sha256.Sum256([]byte(b.AppID + "\x00" + b.IdempotencyKey))
		hash := hex.EncodeToString(sum[:16])
		first, err := s.Claims.ClaimIdempotency(ctx, hash, now)
		if err != nil {
			return Result{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		w.retry = first.Before(now)
		now, w.writer = first, "idem."+hash
	}
	return s.keep(ctx, b.AppID, w, check(b, now), now)
}

// writing is how one request's reports are written.
type writing struct {
	// writer names the rows: the same for a request sent again, so that
	// its rows are replaced, not added to.
	writer string
	// retry says the request was taken before: its tallies, which are
	// added to and not replaced, are not added again.
	retry   bool
	maxRows int
}

// checked is what a request's checks let through: the reports, the index
// of each one's item, and the result so far, which names every refused
// item.
type checked struct {
	reports []Report
	index   []int
	res     Result
}

// keep routes an app's checked reports and keeps them.
func (s *Service) keep(ctx context.Context, appID string, w writing, c checked, now time.Time) (Result, error) {
	res, err := s.route(ctx, appID, w, c, now)
	sortRejected(res.Rejected) // refusals come from the checks, the router and Keep
	return res, err
}

func (s *Service) route(ctx context.Context, appID string, w writing, c checked, now time.Time) (Result, error) {
	reports, index, res := c.reports, c.index, c.res
	routed, err := s.Router.Route(ctx, appID, reports, w.maxRows, now)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	refuse := func(i int, why string) {
		res.Rejected = append(res.Rejected, Rejection{Index: index[i], Error: why})
		res.Accepted--
		res.Failures -= reports[i].Count
		res.Successes -= reports[i].Successes
	}
	for i, why := range routed.Refused {
		refuse(i, why)
	}
	res.NoCircuit = routed.Tallied()
	if res.Accepted == 0 {
		return res, nil
	}
	// The budget is the store's throughput: it refills on the real clock.
	if s.Budget != nil && !s.Budget.Spend(appID, routed.Rows, time.Now()) {
		return Result{}, ErrRowBudget
	}
	if !w.retry {
		// Tallies first: a retry of this request (same Idempotency-Key)
		// adds none, so they must be kept before anything can fail. One
		// that cannot be kept now refuses its own items, for the client
		// to send again, and no more.
		for _, t := range s.Router.Keep(ctx, appID, routed.Tallies) {
			for _, i := range t.Items {
				refuse(i, t.Function+" has no circuit, and its failures per minute could not be kept now: send this item again")
			}
			res.NoCircuit -= len(t.Items)
		}
		if res.Accepted == 0 {
			return Result{}, fmt.Errorf("%w: no tally could be kept", ErrUnavailable)
		}
	}
	if len(routed.Counted) > 0 {
		if err := s.Failures.Record(ctx, w.writer, routed.Counted); err != nil {
			return Result{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if s.Stored != nil {
			s.Stored(reported(routed.Counted))
		}
	}
	return res, nil
}

// reported are the counts of reports, as the evaluator reads them.
func reported(reports []Report) []circuit.Reported {
	out := make([]circuit.Reported, len(reports))
	for i, r := range reports {
		out[i] = circuit.Reported{AppID: r.App, Function: r.Function, Failures: r.Count, Successes: r.Successes}
	}
	return out
}

func sortRejected(r []Rejection) {
	sort.Slice(r, func(a, b int) bool { return r[a].Index < r[b].Index })
}

// check checks each item on its own.
func check(b Batch, now time.Time) checked {
	res := Result{Rejected: []Rejection{}}
	reports := make([]Report, 0, len(b.Items))
	index := make([]int, 0, len(b.Items))
	var looks throttledText
	for i, it := range b.Items {
		r, problem := checkItem(it, b.AppID, now, &looks)
		if problem != "" {
			res.Rejected = append(res.Rejected, Rejection{Index: i, Error: problem})
			continue
		}
		r.TraceParent, r.Instance = b.TraceParent, b.Instance
		if it := b.Items[i]; it.Instance != "" {
			r.Instance = it.Instance
		}
		if it := b.Items[i]; it.TraceParent != "" {
			r.TraceParent = it.TraceParent
		}
		reports = append(reports, r)
		index = append(index, i)
		res.Accepted++
		res.Failures += r.Count
		res.Successes += r.Successes
	}
	return checked{reports, index, res}
}

// throttledText remembers whether the last error text read looked
// throttled: the failures of one batch mostly say the same thing.
type throttledText struct {
	text   string
	looks  bool
	filled bool
}

func (t *throttledText) of(text string) bool {
	if !t.filled || text != t.text {
		t.text, t.looks, t.filled = text, pushback.Says(text), true
	}
	return t.looks
}

func checkItem(it Item, appID string, now time.Time, looks *throttledText) (Report, string) {
	if it.Problem != "" {
		return Report{}, it.Problem
	}
	// An item is one failure unless it says otherwise; one that reports
	// successes only counts no failure.
	count, successes := 1, 0
	if it.Successes != nil {
		successes, count = *it.Successes, 0
	}
	if it.Count != nil {
		count = *it.Count
	}
	at := it.At
	if at.IsZero() {
		at = now
	}
	switch {
	case it.App != "" && it.App != appID:
		return Report{}, fmt.Sprintf("app %q does not match the key, which belongs to %q", it.App, appID)
	case !trigger.ValidName(it.Function):
		return Report{}, "function must be a function name: " + trigger.NameRule
	case count < 0 || count > MaxCount || (count == 0 && it.Successes == nil):
		return Report{}, fmt.Sprintf("count must be between 1 and %d (or 0 with successes)", MaxCount)
	case successes < 0 || successes > MaxSuccesses:
		return Report{}, fmt.Sprintf("successes must be between 0 and %d", MaxSuccesses)
	case count == 0 && successes == 0:
		return Report{}, "the item counts nothing: give count or successes"
	}
	if why := outOfTime(at, now); why != "" {
		return Report{}, why
	}
	r := Report{App: appID, Function: it.Function, Second: at, Count: count, Successes: successes, Sample: it.Sample}
	if count > 0 && it.Sample != "" && looks.of(it.Sample) {
		r.Throttling = count
	}
	return r, ""
}

// outOfTime says why a report's time is refused, or "": its time comes
// from the sender, whichever door it used.
func outOfTime(at, now time.Time) string {
	switch {
	case at.Before(now.Add(-MaxAge)):
		return "at is more than 24 hours ago"
	case at.After(now.Add(MaxSkew)):
		return fmt.Sprintf("at is more than %s in the future; check the sender's clock", MaxSkew)
	}
	return ""
}
