package hostinsight

// The waiting count over time, for an episode's catch-up: how many events
// waited behind a function's checkpoints while its trigger was off, and
// how they drained once it was back on.

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fanout"
	"github.com/fusebox/fusebox/internal/lease"
)

// Drain keeps, each pass, the waiting count of every circuit that names
// its Event Hub while its trigger is off and for Follow after it is back
// on.
type Drain struct {
	Circuits Lister
	Hosts    interface {
		SnapshotAfter(ctx context.Context, app circuit.App, now, after time.Time) (Snapshot, bool)
	}
	Samples interface {
		PutWaiting(ctx context.Context, appID, function string, at time.Time, waiting int64) error
	}
	Now    func() time.Time
	Follow time.Duration // default an hour
}

// drainParallel bounds the apps read at once.
const drainParallel = 8

// Pass samples once. Apps are read side by side, each app's circuits in
// turn (one snapshot serves them all), so a slow account holds up only
// its own app.
func (d *Drain) Pass(ctx context.Context, _ lease.Fence) error {
	now := d.Now()
	follow := d.Follow
	if follow <= 0 {
		follow = time.Hour
	}
	byApp, byID, err := EventHubCircuits(ctx, d.Circuits, func(c circuit.Circuit, app circuit.App) bool {
		return app.EventHubs != "" && !c.Pending() && (c.State.TriggerOff() || now.Sub(c.SwitchedAt()) <= follow)
	})
	if err != nil {
		return err
	}
	return fanout.Each(byApp, drainParallel, func(appID string, circuits []circuit.Circuit) error {
		app := byID[appID]
		var errs []error
		for _, c := range circuits {
			snap, ok := d.Hosts.SnapshotAfter(ctx, app, now, c.SwitchedAt())
			if !ok {
				continue
			}
			var off time.Time
			if c.State.TriggerOff() {
				off = c.SwitchedAt()
			}
			ps, own := Positions(snap, c.Consumes(), off)
			waiting, counted, _ := Waiting(ps)
			if !own || counted == 0 {
				continue
			}
			if err := d.Samples.PutWaiting(ctx, c.AppID, c.Function, now, waiting); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// Drained says, of the waiting counts after a resume at resumed, when
// the function had caught up: the first count at or under a hundredth of
// the most that waited. Events keep arriving on a live hub, so a count of
// exactly zero may never come. False if it did not catch up.
func Drained(samples []WaitingSample, resumed time.Time) (WaitingSample, bool) {
	var most int64
	for _, s := range samples {
		most = max(most, s.Waiting)
	}
	for _, s := range samples {
		if !s.At.Before(resumed) && s.Waiting <= most/100 {
			return s, true
		}
	}
	return WaitingSample{}, false
}

// Lister lists circuits and apps (storage.Lists).
type Lister interface {
	ListCircuits(ctx context.Context) ([]circuit.Circuit, error)
	ListApps(ctx context.Context) ([]circuit.App, error)
}

// EventHubCircuits are the circuits that name an Event Hub, of apps whose
// host storage is set, that keep also says yes to, by app; and the apps
// by id.
func EventHubCircuits(ctx context.Context, l Lister, keep func(circuit.Circuit, circuit.App) bool) (map[string][]circuit.Circuit, map[string]circuit.App, error) {
	cs, err := l.ListCircuits(ctx)
	if err != nil {
		return nil, nil, err
	}
	apps, err := l.ListApps(ctx)
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]circuit.App{}
	for _, a := range apps {
		byID[a.ID] = a
	}
	byApp := map[string][]circuit.Circuit{}
	for _, c := range cs {
		if app, ok := byID[c.AppID]; ok && app.HostStorage != "" && c.Consumes().Hub != "" && keep(c, app) {
			byApp[c.AppID] = append(byApp[c.AppID], c)
		}
	}
	return byApp, byID, nil
}
