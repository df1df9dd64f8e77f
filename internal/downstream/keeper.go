package downstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
)

// What the keeper reads and changes.
type (
	Store interface {
		List(ctx context.Context) ([]Downstream, error)
		Get(ctx context.Context, name string) (Downstream, error)
		Update(ctx context.Context, d Downstream) (Downstream, error)
	}
	// Members changes member circuits on the downstream's behalf
	// (circuit.Service).
	Members interface {
		Flip(ctx context.Context, appID, function, actor, reason string, a circuit.Action) (circuit.Circuit, error)
		Failing(ctx context.Context, circuits []circuit.Circuit) (map[string]circuit.Counts, error)
	}
	Circuits interface {
		List(ctx context.Context) ([]circuit.Circuit, error)
	}
	Apps interface {
		ListApps(ctx context.Context) ([]circuit.App, error)
	}
	Outbox interface {
		Ensure(ctx context.Context, m alerts.Message) error
	}
	Auditor interface {
		Append(ctx context.Context, e audit.Entry) error
	}
	// Prober calls a health URL once, within its own time-out.
	Prober func(ctx context.Context, url string) Answer
)

// Keeper acts on downstreams: by hand, on alerts and on its members'
// counts, and runs their probes. Its Pass runs under a lease.
type Keeper struct {
	Store    Store
	Members  Members
	Circuits Circuits
	Apps     Apps
	Outbox   Outbox
	Audit    Auditor
	Probe    Prober
	// CircuitProbes keeps what circuits' own probes heard; nil runs none.
	CircuitProbes CircuitProbes
	Now           func() time.Time
	Logger        *slog.Logger
	// Within is how long after a change its notices are still sent
	// (alerts' MailableWithin); default a day.
	Within time.Duration

	mu      sync.Mutex
	probing map[string]bool // downstreams whose probe call is in flight
	told    map[string]bool // outbox message ids this instance queued
}

// maxTold bounds told; past it, it starts again (the outbox refuses a
// message twice anyway).
const maxTold = 10_000

func (k *Keeper) logger() *slog.Logger {
	if k.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return k.Logger
}

func (k *Keeper) within() time.Duration {
	if k.Within <= 0 {
		return 24 * time.Hour
	}
	return k.Within
}

// change applies a transition to the stored downstream, retrying a lost
// race twice, and records who did it.
func (k *Keeper) change(ctx context.Context, name, actor, verb string, move func(Downstream) (Downstream, error)) (Downstream, error) {
	for range 3 {
		d, err := k.Store.Get(ctx, name)
		if err != nil {
			return Downstream{}, err
		}
		next, err := move(d)
		if err != nil {
			return d, err
		}
		next, err = k.Store.Update(ctx, next)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return Downstream{}, err
		}
		if k.Audit != nil {
			if err := k.Audit.Append(ctx, audit.Entry{At: next.ChangedAt, Actor: actor, Action: verb, Target: "downstream:" + name,
				Detail: fmt.Sprintf("%s → %s, episode %d: %s", d.State, next.State, next.Episode, next.Reason)}); err != nil {
				return next, err
			}
		}
		return next, nil
	}
	return Downstream{}, fmt.Errorf("downstream %s: %w", name, ErrConflict)
}

// Outcome is what an action did to one member.
type Outcome struct {
	Member string
	Err    error
}

// Trip switches every member's trigger off in one episode: each through
// its own app's switch, each flip marked with the episode. A member
// already off is left as it is; one that cannot be changed stops none of
// the others.
func (k *Keeper) Trip(ctx context.Context, name, actor, reason string) (Downstream, []Outcome, error) {
	d, err := k.change(ctx, name, actor, "tripped", func(d Downstream) (Downstream, error) {
		return Trip(d, actor, reason, k.Now())
	})
	if err != nil {
		return d, nil, err
	}
	out := k.each(ctx, d, func(c circuit.Circuit) (bool, error) {
		if c.State.TriggerOff() {
			return false, nil
		}
		_, err := k.Members.Flip(ctx, c.AppID, c.Function, actor, "downstream "+d.Name+": "+reason, circuit.Tripping.For(d.Mark()))
		return true, err
	})
	k.tell(ctx, d, nil)
	return d, out, nil
}

// Pause switches every member off until until, in one episode: each
// member's own pause ends then, and the downstream closes once they are
// all back (PauseEnded, Settle).
func (k *Keeper) Pause(ctx context.Context, name, actor, reason string, until time.Time) (Downstream, []Outcome, error) {
	d, err := k.change(ctx, name, actor, "paused", func(d Downstream) (Downstream, error) {
		return Pause(d, actor, reason, until, k.Now())
	})
	if err != nil {
		return d, nil, err
	}
	out := k.each(ctx, d, func(c circuit.Circuit) (bool, error) {
		if c.State.TriggerOff() {
			return false, nil
		}
		_, err := k.Members.Flip(ctx, c.AppID, c.Function, actor, "downstream "+d.Name+": "+reason, circuit.PauseUntil(until).For(d.Mark()))
		return true, err
	})
	k.tell(ctx, d, nil)
	return d, out, nil
}

// Throttle lowers every member's concurrency that has a throttle, in
// one episode; members without one are left running.
func (k *Keeper) Throttle(ctx context.Context, name, actor, reason string) (Downstream, []Outcome, error) {
	d, err := k.Store.Get(ctx, name)
	if err != nil {
		return d, nil, err
	}
	out := k.each(ctx, d, func(c circuit.Circuit) (bool, error) {
		if c.State != circuit.Closed || !c.Throttles() {
			return false, nil
		}
		_, err := k.Members.Flip(ctx, c.AppID, c.Function, actor, "downstream "+d.Name+": "+reason, circuit.Throttling.For(d.Mark()))
		return true, err
	})
	if joined(out) == nil && len(out) > 0 {
		// The members' own throttle notices give way (they carry the
		// mark): one notice per destination says they were throttled.
		at := k.Now()
		k.queueOnce(ctx, d, nil, fmt.Sprintf("%s|%d|%s", d.Name, at.Unix(), alerts.KindDownstreamThrottled), func(dests []string) []alerts.Message {
			return alerts.DownstreamThrottled(d.Name, at, dests, at)
		})
	}
	return d, out, nil
}

// Resolved is the cause reported gone: with a probe, the downstream waits
// for its good answers; without, its members go on trial now.
func (k *Keeper) Resolved(ctx context.Context, name, actor, reason string) (Downstream, []Outcome, error) {
	d, err := k.change(ctx, name, actor, "resolved", func(d Downstream) (Downstream, error) {
		return Resolved(d, actor, reason, k.Now())
	})
	if err != nil || d.State != Trial {
		return d, nil, err
	}
	return d, k.try(ctx, d), nil
}

// try puts on trial the members this episode switched off.
func (k *Keeper) try(ctx context.Context, d Downstream) []Outcome {
	return k.each(ctx, d, func(c circuit.Circuit) (bool, error) {
		if !d.Marks(c) || !c.State.TriggerOff() {
			return false, nil
		}
		_, err := k.Members.Flip(ctx, c.AppID, c.Function, d.Actor, "downstream "+d.Name+": "+d.Reason, circuit.Trying.For(d.Mark()))
		return true, err
	})
}

// trialReach is how long putting the members on trial may take before
// the keeper tries again those still off.
const trialReach = 10 * time.Second

// tryLeft puts on trial, again, the members of a trial still off by its
// mark that no pause holds: a trial that did not reach them (a switch
// that failed, an instance that stopped) would leave the downstream on
// trial for good.
func (k *Keeper) tryLeft(ctx context.Context, d Downstream, ms []circuit.Circuit) []Outcome {
	var out []Outcome
	for _, c := range ms {
		if !d.Marks(c) || c.State != circuit.ForcedOpen || !c.PauseUntil.IsZero() {
			continue
		}
		_, err := k.Members.Flip(ctx, c.AppID, c.Function, d.Actor, "downstream "+d.Name+": "+d.Reason, circuit.Trying.For(d.Mark()))
		out = append(out, Outcome{Member: c.ID(), Err: err})
	}
	return out
}

// Resume switches back on, by hand, every member this episode switched
// off (or put on trial): the downstream closes.
func (k *Keeper) Resume(ctx context.Context, name, actor, reason string) (Downstream, []Outcome, error) {
	d, err := k.change(ctx, name, actor, "resumed", func(d Downstream) (Downstream, error) {
		return Resume(d, actor, reason, k.Now())
	})
	if err != nil {
		return d, nil, err
	}
	out := k.each(ctx, d, func(c circuit.Circuit) (bool, error) {
		if !d.Marks(c) || c.State == circuit.Closed || c.State == circuit.Throttled {
			return false, nil
		}
		_, err := k.Members.Flip(ctx, c.AppID, c.Function, actor, "downstream "+d.Name+": "+reason, circuit.Resuming.For(d.Mark()))
		return true, err
	})
	k.tell(ctx, d, nil)
	return d, out, nil
}

// each reads the members' circuits and calls act on each, in order; act
// says whether it acted. Members that are not circuits (deleted since)
// are said so.
func (k *Keeper) each(ctx context.Context, d Downstream, act func(circuit.Circuit) (bool, error)) []Outcome {
	cs, err := k.Circuits.List(ctx)
	if err != nil {
		return []Outcome{{Member: d.Name, Err: err}}
	}
	teamOf, err := k.appTeams(ctx)
	if err != nil {
		return []Outcome{{Member: d.Name, Err: err}}
	}
	byID := make(map[string]circuit.Circuit, len(cs))
	for _, c := range cs {
		byID[c.ID()] = c
	}
	var out []Outcome
	for _, id := range d.Members {
		c, ok := byID[id]
		if !ok {
			out = append(out, Outcome{Member: id, Err: circuit.ErrNoCircuit})
			continue
		}
		if d.Team != "" && teamOf[c.AppID] != d.Team {
			k.leftTeam(d, c, teamOf)
			out = append(out, Outcome{Member: id, Err: ErrLeftTeam})
			continue
		}
		acted, err := act(c)
		if acted || err != nil {
			out = append(out, Outcome{Member: id, Err: err})
		}
	}
	return out
}

// Pass looks at every downstream once: a closed one whose quorum is met
// trips; an off one with a probe is probed when due (each call in its own
// goroutine, so one slow health URL holds up no other); a trial settles
// from its members' states; every episode's notices are in the outbox.
func (k *Keeper) Pass(ctx context.Context, _ lease.Fence) error {
	cs, err := k.Circuits.List(ctx)
	if err != nil {
		return err
	}
	probed := k.probeCircuits(ctx, cs, k.Now())
	ds, err := k.Store.List(ctx)
	if err != nil || len(ds) == 0 {
		return errors.Join(probed, err)
	}
	teamOf, err := k.appTeams(ctx)
	if err != nil {
		return errors.Join(probed, err)
	}
	byID := make(map[string]circuit.Circuit, len(cs))
	for _, c := range cs {
		byID[c.ID()] = c
	}
	// A member whose app left the downstream's team is not the
	// downstream's to count or switch (an admin's downstream, of no
	// team, may span teams): it is left out of every decision
	// (each names it when the downstream acts).
	for i, d := range ds {
		ds[i].Members = slices.DeleteFunc(slices.Clone(d.Members), func(id string) bool {
			c, ok := byID[id]
			return ok && d.Team != "" && teamOf[c.AppID] != d.Team
		})
	}
	// Counting reads the failure window: only for a quorum to check.
	var members []circuit.Circuit
	for _, d := range ds {
		if d.State != Closed || d.Quorum < 1 {
			continue
		}
		for _, id := range d.Members {
			if c, ok := byID[id]; ok {
				members = append(members, c)
			}
		}
	}
	var counts map[string]circuit.Counts
	if len(members) > 0 {
		if counts, err = k.Members.Failing(ctx, members); err != nil {
			return err
		}
	}
	now := k.Now()
	var errs []error
	for _, d := range ds {
		d = d.WithDefaults()
		switch {
		case d.State == Closed:
			if p, end, ok := PauseDue(d, now); ok {
				if _, out, err := k.Pause(ctx, d.Name, circuit.PauseWindowActor, "pause window "+p.String(), end); err != nil && !errors.Is(err, ErrAlreadyOff) {
					errs = append(errs, err)
				} else {
					errs = append(errs, joined(out))
				}
				continue
			}
			k.warnAhead(ctx, d, byID, cs, now)
			if reason, ok := QuorumMet(d, Failing(d, byID, counts)); ok {
				if _, out, err := k.Trip(ctx, d.Name, circuit.EvaluatorActor, reason); err != nil && !errors.Is(err, ErrAlreadyOff) {
					errs = append(errs, err)
				} else {
					errs = append(errs, joined(out))
				}
				continue
			}
		case d.State == Trial:
			var ms []circuit.Circuit
			for _, id := range d.Members {
				if c, ok := byID[id]; ok {
					ms = append(ms, c)
				}
			}
			errs = append(errs, k.settle(ctx, d, "settled", now, func(d Downstream, now time.Time) (Downstream, bool) { return Settle(d, ms, now) }))
			if now.Sub(d.ChangedAt) > trialReach {
				errs = append(errs, joined(k.tryLeft(ctx, d, ms)))
			}
		case d.State.Off() && !d.PauseUntil.IsZero():
			errs = append(errs, k.settle(ctx, d, "pause ended", now, PauseEnded))
		case d.ProbeDue(now):
			k.probe(ctx, d)
		}
		k.tell(ctx, d, cs)
	}
	return errors.Join(append(errs, probed)...)
}

// settle stores what move makes of d when it changes it (read again
// before the write: another pass may have moved it meanwhile).
func (k *Keeper) settle(ctx context.Context, d Downstream, verb string, now time.Time, move func(Downstream, time.Time) (Downstream, bool)) error {
	if _, ok := move(d, now); !ok {
		return nil
	}
	_, err := k.change(ctx, d.Name, circuit.EvaluatorActor, verb, func(cur Downstream) (Downstream, error) {
		if next, ok := move(cur, k.Now()); ok {
			return next, nil
		}
		return cur, ErrNotOff
	})
	if errors.Is(err, ErrNotOff) {
		return nil
	}
	return err
}

func joined(out []Outcome) error {
	var errs []error
	for _, o := range out {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.Member, o.Err))
		}
	}
	return errors.Join(errs...)
}

// probe calls the downstream's health URL in a goroutine of its own,
// unless a call is in flight, and records the answer; enough good ones in
// a row start the trial. The goroutine ends with ctx (the pass's lease).
func (k *Keeper) probe(ctx context.Context, d Downstream) {
	k.mu.Lock()
	if k.probing == nil {
		k.probing = map[string]bool{}
	}
	if k.probing[d.Name] {
		k.mu.Unlock()
		return
	}
	k.probing[d.Name] = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.probing, d.Name)
			k.mu.Unlock()
		}()
		a := k.Probe(ctx, d.Probe.URL)
		var tried bool
		next, err := k.change(ctx, d.Name, "probe", "probed", func(cur Downstream) (Downstream, error) {
			if cur.Probe.URL != d.Probe.URL || !cur.State.Off() {
				return cur, ErrNotOff // changed meanwhile: the answer is of no use
			}
			var next Downstream
			next, tried = Heard(cur.WithDefaults(), a)
			return next, nil
		})
		switch {
		case errors.Is(err, ErrNotOff) || ctx.Err() != nil:
		case err != nil:
			k.logger().Warn("could not record a downstream's probe answer", "downstream", d.Name, "error", err)
		case tried:
			if err := joined(k.try(ctx, next)); err != nil {
				k.logger().Warn("a downstream's trial did not reach every member", "downstream", d.Name, "error", err)
			}
		}
	}()
}

// Busy says a probe call is in flight.
func (k *Keeper) Busy() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.probing) > 0
}

// tell makes sure the episode's notices are in the outbox: one per
// destination, whatever the number of members.
// cs are the circuits as the caller read them; nil: read them.
func (k *Keeper) tell(ctx context.Context, d Downstream, cs []circuit.Circuit) {
	if d.Episode < 1 || d.State == Trial || d.State == Waiting || k.Now().Sub(d.ChangedAt) > k.within() {
		return
	}
	kind := alerts.KindDownstreamResumed
	if d.State.Off() {
		kind = alerts.KindDownstreamOpened
	}
	k.queueOnce(ctx, d, cs, fmt.Sprintf("%s|%d|%s", d.Name, d.Episode, kind), func(dests []string) []alerts.Message {
		return alerts.DownstreamMessages(d.Name, d.Episode, d.State.Off(), d.ChangedAt, dests, k.Now(), k.within())
	})
}

// queueOnce puts in the outbox the messages of key, to the downstream's
// destinations, unless this instance did already (the outbox refuses a
// message twice anyway; asking again every pass would be a storm of
// refused writes). A failure is logged and left to the next pass.
func (k *Keeper) queueOnce(ctx context.Context, d Downstream, cs []circuit.Circuit, key string, messages func(dests []string) []alerts.Message) {
	if k.Outbox == nil {
		return
	}
	k.mu.Lock()
	done := k.told[key]
	k.mu.Unlock()
	if done {
		return
	}
	dests, err := k.destinations(ctx, d, cs)
	if err != nil {
		k.logger().Warn("could not find where a downstream's notice goes; the next pass tries again", "downstream", d.Name, "error", err)
		return
	}
	for _, m := range messages(dests) {
		if err := k.Outbox.Ensure(ctx, m); err != nil {
			k.logger().Warn("could not queue a downstream's notice; the next pass tries again", "downstream", d.Name, "error", err)
			return
		}
	}
	k.mu.Lock()
	if k.told == nil || len(k.told) >= maxTold {
		k.told = map[string]bool{}
	}
	k.told[key] = true
	k.mu.Unlock()
}

func (k *Keeper) destinations(ctx context.Context, d Downstream, cs []circuit.Circuit) ([]string, error) {
	if cs == nil {
		var err error
		if cs, err = k.Circuits.List(ctx); err != nil {
			return nil, err
		}
	}
	apps, err := k.Apps.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	appChannels := map[string][]string{}
	for _, a := range apps {
		appChannels[a.ID] = a.Channels
	}
	var members [][]string
	for _, c := range cs {
		if slices.Contains(d.Members, c.ID()) {
			members = append(members, alerts.Destinations(c.Recipients, c.Channels, appChannels[c.AppID]))
		}
	}
	return alerts.DownstreamDestinations(d.Recipients, d.Channels, members), nil
}

// warnAhead warns, within the hour before the downstream's next pause
// window opens, when a member's hub keeps events less long than the
// window: its waiting events would expire before the members resume.
// One notice per destination and opening.
func (k *Keeper) warnAhead(ctx context.Context, d Downstream, byID map[string]circuit.Circuit, cs []circuit.Circuit, now time.Time) {
	p, start, _, ok := circuit.NextOpening(d.PauseWindows, now)
	if !ok || start.Sub(now) > time.Hour {
		return
	}
	for _, id := range d.Members {
		if c, ok := byID[id]; ok && c.HubRetention > 0 && p.Duration >= c.HubRetention {
			k.queueOnce(ctx, d, cs, fmt.Sprintf("%s|%d|%s", d.Name, start.Unix(), alerts.KindPauseAhead), func(dests []string) []alerts.Message {
				return alerts.DownstreamPauseAhead(d.Name, start, dests, now)
			})
			return
		}
	}
}

// ErrLeftTeam is a member whose app is no longer of the downstream's
// team: the downstream may not switch it, and skips it.
var ErrLeftTeam = errors.New("downstream: the member's app is of another team now: skipped (an admin may move it back, or remove it from the downstream)")

// appTeams maps each app to its team.
func (k *Keeper) appTeams(ctx context.Context) (map[string]string, error) {
	apps, err := k.Apps.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(apps))
	for _, a := range apps {
		out[a.ID] = a.Team
	}
	return out, nil
}

// leftTeam tells admins, in the log, of a member the downstream skipped.
func (k *Keeper) leftTeam(d Downstream, c circuit.Circuit, teamOf map[string]string) {
	k.logger().Warn("a downstream's member is of another team now: skipped", "downstream", d.Name, "downstream_team", d.Team, "member", c.ID(), "member_team", teamOf[c.AppID])
}
