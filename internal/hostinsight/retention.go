package hostinsight

// How long the events waiting behind a switched-off Event Hubs trigger
// are safe: the hub drops each event its retention after it arrived,
// whether anyone read it or not.

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Retention is what the hub's retention means for the events waiting
// behind a function's checkpoints.
type Retention struct {
	Waiting int64 // events waiting, on the partitions Event Hubs answered for
	// Oldest is when the first waiting event arrived, on Partition; zero
	// when it was not read.
	Oldest    time.Time
	Partition string
	// Keep is the hub's retention; zero: not known (the circuit names
	// none), and then Expires is zero too.
	Keep time.Duration
	// FromAzure says Keep is what ARM says of the hub, not the circuit's
	// setting.
	FromAzure bool
	Expires   time.Time // when the first waiting event expires
	Lost      int64     // events retention dropped before they were read
	// Unread are the partitions with events waiting whose oldest could
	// not be read in time: one of them may hold an older event than
	// Oldest.
	Unread []string
}

// RetentionOf reads ps, whose Oldest are filled in, against the hub's
// retention keep.
func RetentionOf(ps []Position, keep time.Duration) Retention {
	r := Retention{Keep: keep, Lost: Lost(ps)}
	r.Waiting, _, _ = Waiting(ps)
	for _, p := range ps {
		if p.Counted && p.Waiting > 0 && p.Oldest.IsZero() {
			r.Unread = append(r.Unread, p.Partition)
		}
		if p.Counted && p.Waiting > 0 && !p.Oldest.IsZero() && (r.Oldest.IsZero() || p.Oldest.Before(r.Oldest)) {
			r.Oldest, r.Partition = p.Oldest, p.Partition
		}
	}
	if !r.Oldest.IsZero() && keep > 0 {
		r.Expires = r.Oldest.Add(keep)
	}
	return r
}

// ReminderSteps are how long before the first waiting event expires its
// people are told, each once an episode.
var ReminderSteps = []time.Duration{24 * time.Hour, 6 * time.Hour, time.Hour}

// Step is the reminder step now falls in: the shortest of steps not longer
// than the time left, while none has expired yet. A watcher that looks
// late owes only the nearest step, not every one it missed.
func (r Retention) Step(now time.Time, steps []time.Duration) (time.Duration, bool) {
	if r.Expires.IsZero() || r.Lost > 0 || !now.Before(r.Expires) {
		return 0, false
	}
	left := r.Expires.Sub(now)
	var step time.Duration
	for _, s := range steps {
		if left <= s && (step == 0 || s < step) {
			step = s
		}
	}
	return step, step > 0
}

// OffRetention reads, for a circuit whose trigger has been off since off,
// its hub's checkpoints in app's storage, what waits behind them and when
// the oldest of it arrived. False when Fusebox reads neither the app's
// storage nor its hub, or the circuit names no hub.
func (s *Source) OffRetention(ctx context.Context, app circuit.App, ci circuit.Circuit, now, off time.Time) (Retention, []Position, bool) {
	ref := ci.Consumes()
	if ref.Hub == "" || app.EventHubs == "" {
		return Retention{}, nil, false
	}
	snap, ok := s.SnapshotAfter(ctx, app, now, off)
	if !ok {
		return Retention{}, nil, false
	}
	ps, _ := Positions(snap, ref, off)
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	r, _ := s.Aging(ctx, app, ci, ps, timeout)
	return r, ps, true
}

// Aging fills in, for a circuit whose trigger is off, when the oldest
// event waiting behind each of ps arrived (within timeout), and says what
// the hub's retention makes of them; the problems are the partitions and
// the retention that could not be read.
func (s *Source) Aging(ctx context.Context, app circuit.App, ci circuit.Circuit, ps []Position, timeout time.Duration) (Retention, []Problem) {
	problems := s.ReadOldest(ctx, app, ps, timeout)
	keep, fromAzure, problem := s.keepOf(ctx, app, ci, ps)
	if problem != nil {
		problems = append(problems, *problem)
	}
	r := RetentionOf(ps, keep)
	r.FromAzure = fromAzure
	return r, problems
}

// keepOf is how long ci's hub keeps an event: the circuit's setting, else
// what ARM says of the hub whose checkpoints ps are (when Keep is set and
// something waits), and whether it came from ARM; a problem says why ARM
// could not tell.
func (s *Source) keepOf(ctx context.Context, app circuit.App, ci circuit.Circuit, ps []Position) (time.Duration, bool, *Problem) {
	if ci.HubRetention > 0 || s.Keep == nil || app.SubscriptionID == "" {
		return ci.HubRetention, false, nil
	}
	for _, p := range ps {
		if p.Counted && p.Waiting > 0 {
			keep, err := s.Keep(ctx, app.SubscriptionID, p.Namespace, p.Hub)
			if err != nil {
				return 0, false, &Problem{Blob: "retention of event hub " + p.Namespace + "/" + p.Hub, Reason: err.Error()}
			}
			return keep, true, nil
		}
	}
	return 0, false, nil
}
