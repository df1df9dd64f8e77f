package episode

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/replay"
)

// Reader assembles records from what the store keeps: flips, the outbox,
// the audit log and the failure rows with their texts.
type Reader struct {
	Flips interface {
		Flips(ctx context.Context, appID, function string, limit int) ([]circuit.Flip, error)
	}
	Notices interface {
		OfEpisodes(ctx context.Context, circuitID string, first, last int64, limit int) ([]alerts.Message, error)
	}
	Audit interface {
		About(ctx context.Context, target string, from, to time.Time, limit int) ([]audit.Entry, error)
	}
	Rows errortexts.Rows
	// Replays are episodes' replays (nil: none shown).
	Replays interface {
		Get(ctx context.Context, appID, function string, episode int64) (replay.Record, error)
	}
	// Kept is how long failure rows are kept (storage.FailureRetention):
	// an older trip's errors are gone.
	Kept time.Duration
}

// Bounds of one record: the flips searched for the trip, the notices,
// actions and error groups listed.
const (
	MaxFlips   = 200
	MaxNotices = 200
	MaxActions = 200
	MaxGroups  = 10
)

// Of assembles episode n of ci.
func (r Reader) Of(ctx context.Context, ci circuit.Circuit, n int64, now time.Time) (Record, error) {
	flips, err := r.Flips.Flips(ctx, ci.AppID, ci.Function, MaxFlips)
	if err != nil {
		return Record{}, err
	}
	trip, steps, err := Flips(flips, n)
	if err != nil {
		return Record{}, err
	}
	rec := Record{Circuit: ci.ID(), Episode: n, Trip: trip, Steps: steps}
	if r.Replays != nil && ci.Consumes().Hub != "" {
		// The point is placed at the episode the trigger went off in: the
		// trip's, or a re-trip's after a trial; the latest of them counts.
		for e := rec.Last(); e >= n; e-- {
			if rp, err := r.Replays.Get(ctx, ci.AppID, ci.Function, e); err == nil {
				rec.Replay = &rp
				break
			}
		}
	}
	if rec.Notices, err = r.Notices.OfEpisodes(ctx, ci.ID(), n, rec.Last(), MaxNotices); err != nil {
		return Record{}, err
	}
	// An action a moment before the trip's flip is the trip by hand itself.
	if rec.Actions, err = r.Audit.About(ctx, ci.ID(), trip.At.Add(-time.Second), rec.Ended(now).Add(time.Second), MaxActions); err != nil {
		return Record{}, err
	}
	from := trip.Since
	if from.IsZero() || from.Before(trip.At.Add(-trip.Window)) {
		from = trip.At.Add(-trip.Window)
	}
	if r.Kept > 0 && from.Before(now.Add(-r.Kept)) {
		rec.ErrorsGone = true
		return rec, nil
	}
	if rec.Errors, rec.ErrorsOther, rec.ErrorsPartial, err = errortexts.Between(ctx, r.Rows, ci.AppID, ci.Function, from, trip.At, MaxGroups); err != nil {
		return Record{}, err
	}
	return rec, nil
}
