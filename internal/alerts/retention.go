package alerts

// Reminders ahead of an event hub's retention: while a trigger is off,
// the events waiting behind its checkpoints age, and the hub drops each
// its retention after it arrived, read or not.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/fanout"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
)

// Kinds of message about waiting events.
const (
	// KindExpiringPrefix begins the kind of a reminder that waiting events
	// begin to expire within a step: "expiring-24h", "expiring-6h"...
	KindExpiringPrefix = "expiring-"
	// KindExpiringEscalated tells the escalation list, at the last step,
	// of an episode nobody has acknowledged.
	KindExpiringEscalated = "expiring-escalated"
	// KindEventsLost: retention dropped waiting events before they were
	// read; once an episode.
	KindEventsLost = "events-lost"
)

// ExpiringKind is the kind of the reminder for step.
func ExpiringKind(step time.Duration) string {
	return KindExpiringPrefix + strings.TrimSuffix(strings.TrimSuffix(step.String(), "0s"), "0m")
}

// ExpiringStep reads the step back from a kind ExpiringKind wrote.
func ExpiringStep(kind string) (time.Duration, bool) {
	s, ok := strings.CutPrefix(kind, KindExpiringPrefix)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

// RetentionOwed lists what an open episode's waiting events owe: the
// reminder for the step due now (one per episode and step) to dests, and
// once events were lost, one loss notice. While nobody has acknowledged
// the episode, the last step and the loss also go to its escalation list.
func RetentionOwed(c circuit.Circuit, r hostinsight.Retention, steps []time.Duration, dests []string, now time.Time) []Message {
	if !c.State.TriggerOff() || c.Pending() || c.Shadow || c.Episode < 1 {
		return nil
	}
	// As with escalation by time: an episode someone acknowledged, or an
	// operator's own trip, has its person.
	unacked := c.AckedEpisode != c.Episode && c.State != circuit.ForcedOpen
	addresses, channels := c.Escalate.Split()
	escalation := Destinations(addresses, channels, nil)
	var out []Message
	if step, ok := r.Step(now, steps); ok {
		out = append(out, messages(c.ID(), c.Episode, []string{ExpiringKind(step)}, dests, now)...)
		if step == lastStep(steps) && unacked {
			out = append(out, messages(c.ID(), c.Episode, []string{KindExpiringEscalated}, escalation, now)...)
		}
	}
	if r.Lost > 0 {
		out = append(out, messages(c.ID(), c.Episode, []string{KindEventsLost}, dests, now)...)
		if unacked {
			out = append(out, messages(c.ID(), c.Episode, []string{KindEventsLost}, escalation, now)...)
		}
	}
	return out
}

func lastStep(steps []time.Duration) time.Duration {
	var last time.Duration
	for _, s := range steps {
		if last == 0 || s < last {
			last = s
		}
	}
	return last
}

// RetentionReader reads what waits behind a switched-off trigger
// (hostinsight.Source).
type RetentionReader interface {
	OffRetention(ctx context.Context, app circuit.App, ci circuit.Circuit, now, off time.Time) (hostinsight.Retention, []hostinsight.Position, bool)
}

// RetentionWatch looks, for every circuit whose trigger is off and whose
// hub Fusebox reads, at how long its waiting events are safe, and puts
// what that owes in the outbox; the sender delivers it. Run it under a
// lease: every instance's watch would only ask the hubs the same.
type RetentionWatch struct {
	Circuits Circuits
	Reader   RetentionReader
	Outbox   Outbox
	Steps    []time.Duration // default hostinsight.ReminderSteps
	Clock    clock.Clock

	mu      sync.Mutex
	ensured map[string]time.Time // messages known to be in the outbox, by when
}

// Pass looks once at every switched-off circuit whose hub Fusebox reads.
// Apps are looked at side by side (at most watchParallel at once), each
// app's circuits one after another within its reader's own time-outs: a
// slow namespace or account holds up only its own app's look, and no
// circuit's switch waits on any of it.
func (w *RetentionWatch) Pass(ctx context.Context, _ lease.Fence) error {
	now := w.Clock.Now()
	cs, err := w.Circuits.ListCircuits(ctx)
	if err != nil {
		return err
	}
	apps, err := w.Circuits.ListApps(ctx)
	if err != nil {
		return err
	}
	byID := map[string]circuit.App{}
	for _, a := range apps {
		byID[a.ID] = a
	}
	steps := w.Steps
	if len(steps) == 0 {
		steps = hostinsight.ReminderSteps
	}
	byApp := map[string][]circuit.Circuit{}
	for _, c := range cs {
		app, ok := byID[c.AppID]
		if !ok || !c.State.TriggerOff() || c.Pending() || c.Shadow || app.EventHubs == "" || c.Consumes().Hub == "" {
			continue
		}
		byApp[c.AppID] = append(byApp[c.AppID], c)
	}
	err = fanout.Each(byApp, watchParallel, func(appID string, circuits []circuit.Circuit) error {
		app := byID[appID]
		var errs []error
		for _, c := range circuits {
			c.Escalate = c.EscalationOf(app)
			r, _, ok := w.Reader.OffRetention(ctx, app, c, now, c.SwitchedAt())
			if !ok {
				continue
			}
			dests := Destinations(c.Recipients, c.Channels, app.Channels)
			for _, m := range RetentionOwed(c, r, steps, dests, now) {
				if err := w.ensure(ctx, m, now); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", m.ID, err))
				}
			}
		}
		return errors.Join(errs...)
	})
	w.forget(now, slices.Max(steps))
	return err
}

// watchParallel bounds the apps looked at at once.
const watchParallel = 8

// ensure puts m in the outbox once: a step stays owed for hours, and
// asking the outbox again each pass would be a refused write a minute.
func (w *RetentionWatch) ensure(ctx context.Context, m Message, now time.Time) error {
	w.mu.Lock()
	_, known := w.ensured[m.ID]
	w.mu.Unlock()
	if known {
		return nil
	}
	if err := w.Outbox.Ensure(ctx, m); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ensured == nil {
		w.ensured = map[string]time.Time{}
	}
	w.ensured[m.ID] = now
	return nil
}

// forget drops what no step can owe any more.
func (w *RetentionWatch) forget(now time.Time, longest time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, at := range w.ensured {
		if now.Sub(at) > 2*longest {
			delete(w.ensured, id)
		}
	}
}
