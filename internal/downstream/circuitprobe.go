package downstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// CircuitProbes keeps what circuits' own probes heard (storage.Probes).
type CircuitProbes interface {
	All(ctx context.Context) (map[string]circuit.ProbeRecord, error)
	Get(ctx context.Context, appID, function string) (circuit.ProbeRecord, error)
	Put(ctx context.Context, appID, function string, r circuit.ProbeRecord) error
}

// probeCircuits runs the probes of circuits whose automatic trial waits
// for them (circuit.ProbeWaits), each call in a goroutine of its own,
// and puts on trial those whose probe answered well enough in a row.
func (k *Keeper) probeCircuits(ctx context.Context, cs []circuit.Circuit, now time.Time) error {
	if k.CircuitProbes == nil {
		return nil
	}
	// Those whose probe may be waited for: the records are read only then
	// (an open circuit past its cooldown needs none; a forced-open one
	// waits only once an alert rule it names resolved).
	var waiting []circuit.Circuit
	for _, c := range cs {
		switch {
		case c.Probe.URL == "" || c.Pending():
		case c.State == circuit.Open && c.ProbeWaits(circuit.ProbeRecord{}, now) != "",
			c.State == circuit.ForcedOpen && len(c.AlertRules) > 0 && c.PauseUntil.IsZero():
			waiting = append(waiting, c)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	recs, err := k.CircuitProbes.All(ctx)
	if err != nil {
		return err
	}
	for _, c := range waiting {
		r := recs[c.ID()]
		switch {
		case c.ProbeTries(r, now):
			k.tryCircuit(ctx, c, r)
		case c.ProbeDue(r, now):
			k.probeCircuit(ctx, c)
		}
	}
	return nil
}

// tryCircuit puts c on trial for its probe's answers.
func (k *Keeper) tryCircuit(ctx context.Context, c circuit.Circuit, r circuit.ProbeRecord) {
	reason := fmt.Sprintf("%s; the probe answered well %s in a row: trigger on for a trial; the circuit's own counts decide", c.ProbeWaits(r, k.Now()), plural(r.InARow, "time"))
	// A pass that read the circuits before the last one's trial was
	// stored asks again: the trial is already on (ErrNoTrial).
	if _, err := k.Members.Flip(ctx, c.AppID, c.Function, "probe", reason, circuit.Trying.For(c.Downstream)); err != nil && !errors.Is(err, circuit.ErrNoTrial) {
		k.logger().Warn("a circuit's probe could not start its trial", "circuit", c.ID(), "error", err)
	}
}

// probeCircuit calls c's probe in a goroutine of its own, unless a call
// is in flight, and records the answer for its episode; the next pass
// starts the trial when the answers say so.
func (k *Keeper) probeCircuit(ctx context.Context, c circuit.Circuit) {
	key := "circuit:" + c.ID()
	k.mu.Lock()
	if k.probing == nil {
		k.probing = map[string]bool{}
	}
	if k.probing[key] {
		k.mu.Unlock()
		return
	}
	k.probing[key] = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.probing, key)
			k.mu.Unlock()
		}()
		a := k.Probe(ctx, c.Probe.URL)
		r, err := k.CircuitProbes.Get(ctx, c.AppID, c.Function)
		if err == nil {
			err = k.CircuitProbes.Put(ctx, c.AppID, c.Function, r.Heard(c.Episode, a))
		}
		if err != nil && ctx.Err() == nil {
			k.logger().Warn("could not record a circuit's probe answer", "circuit", c.ID(), "error", err)
		}
	}()
}

// WaitForProbe records that an alert rule c names resolved: c's trial
// waits for its probe (instead of starting at once).
func (k *Keeper) WaitForProbe(ctx context.Context, c circuit.Circuit, reason string) error {
	r, err := k.CircuitProbes.Get(ctx, c.AppID, c.Function)
	if err != nil {
		return err
	}
	if r.Episode != c.Episode {
		r = circuit.ProbeRecord{Episode: c.Episode}
	}
	r.Resolved, r.Reason = true, reason
	return k.CircuitProbes.Put(ctx, c.AppID, c.Function, r)
}
