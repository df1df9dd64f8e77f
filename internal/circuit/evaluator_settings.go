package circuit

import (
	"context"
	"log/slog"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

// Status is what the evaluator reports about itself for the dashboard.
type Status struct {
	Leader       string
	LastTickAt   time.Time
	TickDuration time.Duration
	Rejected     int64  // unreadable failure rows seen by this leader
	LastRejected string // the last one: its key and what is wrong
	RejectedAt   time.Time
	Tally        Tally // for metrics
}

// Stale reports whether the evaluator has not finished a tick for three of
// its intervals: no circuit is being counted, tripped or switched.
func (s Status) Stale(now time.Time, interval time.Duration) bool {
	return s.LastTickAt.IsZero() || now.Sub(s.LastTickAt.Add(s.TickDuration)) > 3*interval
}

// Stores are the repositories the breaker reads and writes, each as
// internal/storage spells its methods: the evaluator, operators' actions
// and the verifier use them directly, with no adapter between.
type Stores struct {
	Apps     AppStore
	Circuits CircuitStore
	Failures FailureStore
	Status   StatusStore
}

// AppStore reads registered apps (storage.Apps).
type AppStore interface {
	List(ctx context.Context) ([]App, error)
	Get(ctx context.Context, id string) (App, error)
}

// CircuitStore keeps circuits and their flip logs (storage.Circuits).
type CircuitStore interface {
	List(ctx context.Context) ([]Circuit, error)
	// Get reads one circuit afresh, as storage holds it now.
	Get(ctx context.Context, appID, function string) (Circuit, error)
	Create(ctx context.Context, c Circuit) error
	// UpdateSettings replaces the settings, keeping state; conditional on
	// c.Version.
	UpdateSettings(ctx context.Context, c Circuit) error
	// Delete removes a circuit and its flip log, conditional on version.
	Delete(ctx context.Context, appID, function, version string) error
	// Acknowledge records c's AckedEpisode, AckedBy and AckedAt,
	// conditional on c.Version.
	Acknowledge(ctx context.Context, c Circuit) error
	// Reapply marks c's episode as not applied: the switch sets its
	// trigger again.
	Reapply(ctx context.Context, c Circuit) error
	// Transition records a state change and its flip on condition that
	// the circuit is still at c.Version and the fence admits the write.
	Transition(ctx context.Context, f lease.Fence, c Circuit, fl Flip) error
	// TransitionGuarded is Transition for a trip the app's guardrail
	// limits: admit is asked, on every circuit of the app as storage holds
	// it after a read of the app's guard version, whether the trip may
	// happen, and the write is conditional on that version too. admit's
	// error comes back as it is.
	TransitionGuarded(ctx context.Context, f lease.Fence, c Circuit, fl Flip, admit func(app []Circuit, unreadable int) error) error
	// MarkApplied records in c's actuation that the trigger was set for
	// c.Episode at the time given (refused if a newer episode was);
	// SetApplyError that it could not be, why, and when to retry (refused
	// once it was). Neither changes c.Version.
	MarkApplied(ctx context.Context, f lease.Fence, c Circuit, at time.Time) error
	SetApplyError(ctx context.Context, f lease.Fence, c Circuit, problem string, attempts int, retryAt time.Time) error
	// SetLowered records in c's actuation, for c.Episode, the settings a
	// throttle is about to change as they were before it (nil: absent),
	// and the trigger kind they were read for; refused once a newer
	// episode was switched. It does not change c.Version.
	SetLowered(ctx context.Context, f lease.Fence, c Circuit, kind string, before map[string]*string) error
	// ReleaseLowered replaces, for c.Episode, the settings a throttle
	// holds with before (what is left of them) and records on the circuit
	// why the rest were handed back; refused if the circuit moved on.
	ReleaseLowered(ctx context.Context, f lease.Fence, c Circuit, before map[string]*string, released string) error
	// SetDrift and SetConfirmation record, in c's actuation, what was found
	// of c.Episode's trigger once applied; refused if another episode was.
	SetDrift(ctx context.Context, f lease.Fence, c Circuit, drift string, now time.Time) error
	SetConfirmation(ctx context.Context, f lease.Fence, c Circuit, got Confirmation, at time.Time) error
	// Flips returns up to limit flip-log entries, newest first.
	Flips(ctx context.Context, appID, function string, limit int) ([]Flip, error)
}

// FailureStore reads failure rows (storage.Failures).
type FailureStore interface {
	// CircuitWindow reads one circuit's failure rows for seconds in
	// [from, to] afresh: the read a report that may trip it costs.
	CircuitWindow(ctx context.Context, appID, function string, from, to time.Time) ([]FailureRow, error)
	// Window returns the failure rows for seconds in [from, to], each
	// once, and the unreadable rows not reported before. It may read only
	// what changed since its previous call. The rows may be shared with
	// other callers: they are read, never written.
	Window(ctx context.Context, from, to time.Time) ([]FailureRow, []Rejection, error)
}

// StatusStore keeps what the evaluator last said of itself (storage.Status).
type StatusStore interface {
	PutEvaluator(ctx context.Context, s Status) error
	// Evaluator reads what PutEvaluator last stored (the zero Status if
	// nothing).
	Evaluator(ctx context.Context) (Status, error)
}

// Switch turns functions' triggers off and on for one kind of app.
type Switch interface {
	// Disabled returns the functions the app's settings switch off.
	Disabled(ctx context.Context, app App) (map[string]bool, error)
	// Apply switches each named function off (true) or on (false) in one
	// change of the app's settings, since each change restarts the app.
	// Settings it was not asked to change stay as they are.
	Apply(ctx context.Context, app App, off map[string]bool) error
}

// Claimer takes short claims on one piece of work: a lease.Locker with
// short timings. A claim lapses when its holder stops renewing it, so work
// a frozen instance had claimed moves to another within the claim's
// Duration.
type Claimer interface {
	AcquireWithin(ctx context.Context, name string, within time.Duration) (*lease.Lease, error)
}

// SwitchClaim names the claim under which an app's trigger settings are
// read and written: one switch call per app at a time, across instances.
func SwitchClaim(appID string) string { return "switch/" + appID }

// EvaluatorSettings tune the evaluator. Zero values take the defaults.
type EvaluatorSettings struct {
	// Claims serialise each app's switch calls across instances. Required.
	Claims     Claimer
	Interval   time.Duration // between ticks; default 1s
	DriftEvery time.Duration // how often actual trigger settings are read back; default 30s
	// ApplyTimeout bounds one app's switch call, retries included; default 45s.
	ApplyTimeout time.Duration
	// Parallel bounds the apps switched at once; default 16. Each app has
	// at most one call in flight, so a slow app delays only itself.
	Parallel int
	// RetryFirst and RetryMax bound the backoff after a failed switch:
	// it doubles from RetryFirst up to RetryMax. Defaults 2s and 5m.
	RetryFirst, RetryMax time.Duration
	Clock                clock.Clock
	Logger               *slog.Logger
	Identity             string // reported as the leader in Status
	// OnTransition, if set, is told of each transition the evaluator made
	// and returns the context the switch call that applies it runs in
	// (tracing: the trip's span). It must not block.
	OnTransition func(ctx context.Context, c Circuit, fl Flip) context.Context
}
