// Package forecast says, before an Event Hubs function is paused, what the
// pause does to its events: how many will wait at its end, whether the
// oldest will still be in the hub when the trigger comes back on, and how
// long the catch-up takes.
//
// It reads the function's own checkpoint history (replay samples, every
// 10 s while it runs): while a function keeps up, its checkpoints advance
// as fast as events arrive, so their advance over the last minutes is the
// ingress rate; the fastest they ever advanced (after an earlier pause, a
// trip, a restart) is what it can process. Events are read oldest first,
// so the oldest waiting event is the one at risk: it is as old, when the
// trigger comes back on, as the pause is long plus what already waited.
package forecast

import (
	"fmt"
	"math"
	"time"

	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/spoken"
)

// Forecast is what a pause of Length does.
type Forecast struct {
	Length time.Duration
	Keep   time.Duration // the hub's retention; zero: not known
	// Rate is events a second arriving (its checkpoints' advance over the
	// recent samples); Known says there was history to tell it.
	Rate  float64
	Known bool
	// Fastest is the fastest its checkpoints advanced between two samples
	// in the history read; it catches up only when Fastest > Rate.
	Fastest float64
	// Backlog is how many events wait when the pause ends.
	Backlog int64
	// Expires says the oldest waiting events are gone before the trigger
	// comes back on: Length ≥ Keep.
	Expires bool
	// CatchUp is how long it takes, at Fastest, to read the backlog while
	// events keep arriving; zero when not known.
	CatchUp time.Duration
}

// Recent is how far back the ingress rate is read; History how far back
// the fastest advance is looked for.
const (
	Recent  = 10 * time.Minute
	History = 2 * time.Hour
)

// Of forecasts a pause of length from samples (oldest first, at most
// History back), for a hub keeping events keep.
func Of(samples []replay.Sample, now time.Time, length, keep time.Duration) Forecast {
	f := Forecast{Length: length, Keep: keep, Expires: keep > 0 && length >= keep}
	var recent []replay.Sample
	for _, s := range samples {
		if !s.At.Before(now.Add(-Recent)) {
			recent = append(recent, s)
		}
	}
	if len(recent) >= 2 {
		first, last := recent[0], recent[len(recent)-1]
		if dt := last.At.Sub(first.At).Seconds(); dt > 0 {
			f.Rate, f.Known = float64(advance(first, last))/dt, true
		}
	}
	for i := 1; i < len(samples); i++ {
		if dt := samples[i].At.Sub(samples[i-1].At).Seconds(); dt >= 5 {
			f.Fastest = math.Max(f.Fastest, float64(advance(samples[i-1], samples[i]))/dt)
		}
	}
	if f.Known {
		f.Backlog = int64(math.Round(f.Rate * length.Seconds()))
		if f.Fastest > f.Rate*1.05 && f.Backlog > 0 {
			f.CatchUp = time.Duration(float64(f.Backlog) / (f.Fastest - f.Rate) * float64(time.Second)).Round(time.Second)
		}
	}
	return f
}

// advance is how many events the checkpoints moved on from a to b, over
// the partitions both name (a checkpoint moved back, by a replay, counts
// nothing).
func advance(a, b replay.Sample) int64 {
	var n int64
	for _, m := range b.Marks {
		if was, ok := a.Mark(m.Key); ok && was.HasSequence && m.HasSequence && m.Sequence > was.Sequence {
			n += m.Sequence - was.Sequence
		}
	}
	return n
}

// Words says the forecast as the pages and notices say it.
func (f Forecast) Words() string {
	var s string
	switch {
	case !f.Known:
		s = fmt.Sprintf("Its checkpoint history is too short to tell how fast events arrive, so how many will wait after %s is not known.", spoken.Duration(f.Length))
	case f.CatchUp > 0:
		s = fmt.Sprintf("At %s events/s arriving, about %d wait when the %s pause ends; at the fastest it has read them (%s/s), it catches up in about %s.",
			rate(f.Rate), f.Backlog, spoken.Duration(f.Length), rate(f.Fastest), spoken.Duration(f.CatchUp))
	default:
		s = fmt.Sprintf("At %s events/s arriving, about %d wait when the %s pause ends; it has never read faster than they arrive here, so how long it takes to catch up is not known.",
			rate(f.Rate), f.Backlog, spoken.Duration(f.Length))
	}
	switch {
	case f.Expires:
		s += fmt.Sprintf(" The hub keeps events %s: the first of them expire before the trigger comes back on.", spoken.Duration(f.Keep))
	case f.Keep > 0:
		s += fmt.Sprintf(" The hub keeps events %s: the oldest is %s old when the trigger comes back on, and none expires.", spoken.Duration(f.Keep), spoken.Duration(f.Length))
	}
	return s
}

func rate(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}
