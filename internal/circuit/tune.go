package circuit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/throttle"
)

// Tuner is a switch that can also change an app's other settings in the
// same write as its triggers: a throttle's levers.
type Tuner interface {
	// Settings reads the app's settings as they are.
	Settings(ctx context.Context, app App) (map[string]string, error)
	// Tune switches each function in off as it says and sets each setting
	// in set (nil: removes it) in one read–merge–write: one restart.
	Tune(ctx context.Context, app App, off map[string]bool, set map[string]*string) error
}

// ErrCannotTune is a switch that can only move triggers.
var ErrCannotTune = errors.New("this app's switch cannot change its concurrency settings (only App Service, Container Apps and local apps can be throttled)")

// tuning says whether applying due needs the settings merged in: a due
// circuit is throttled, or holds settings a throttle lowered.
func tuning(due []Circuit) bool {
	for _, c := range due {
		if !c.Shadow && (c.State == Throttled || c.Lowered != nil) {
			return true
		}
	}
	return false
}

// record reads, for each due throttled circuit that has not yet, the
// settings its throttle will change, and stores them before anything is
// written. A setting another circuit of the app already lowered is taken
// as that circuit recorded it, not as it is now (lowered). A circuit whose
// record cannot be made (its row moved on, its trigger kind unknown) is
// left out with its reason, so that it holds up no other circuit of the
// app; err is the app's settings that could not be read, which holds up
// all of them.
func (w *switcher) record(ctx context.Context, f lease.Fence, tu Tuner, app App, due, others []Circuit) (kept []Circuit, left map[string]error, err error) {
	var current map[string]string
	everyone := slices.Concat(others, due)
	left = map[string]error{}
	for _, c := range due {
		if c.Shadow || c.State != Throttled || c.Lowered != nil {
			kept = append(kept, c)
			continue
		}
		kind := c.ThrottleKind()
		if kind == "" {
			left[c.Function] = errors.New("its trigger kind is not known, so there is nothing to lower: set it in the circuit's settings")
			continue
		}
		if current == nil {
			callCtx, cancel := context.WithTimeout(ctx, w.s.ApplyTimeout)
			current, err = tu.Settings(callCtx, app)
			cancel()
			if err != nil {
				return nil, nil, err
			}
		}
		before := throttle.Before(current, kind)
		for _, o := range everyone {
			for k, v := range o.Lowered {
				if _, ok := before[k]; ok && o.Function != c.Function {
					before[k] = v
				}
			}
		}
		if err := w.store.Circuits.SetLowered(ctx, f, c, kind, before); err != nil {
			left[c.Function] = fmt.Errorf("could not record what the throttle changes: %w", err)
			continue
		}
		c.Lowered, c.LoweredKind = before, kind
		kept = append(kept, c)
	}
	return kept, left, nil
}

// tuned is what the app's lowered settings should be, from its circuits as
// they stand: each circuit holding the app lowered wants its share of what
// was there before (a tripped or trial circuit keeps the ramp's lowest
// share until its resume); a closed one wants it back. Where several want
// one setting, the lowest value wins, and nothing is put back while any
// circuit still holds it lowered.
func tuned(cs []Circuit) map[string]*string {
	low := map[string]*string{}
	back := map[string]*string{}
	for _, c := range cs {
		if c.Shadow || c.Lowered == nil {
			continue
		}
		switch {
		case c.State == Closed:
			for k, v := range throttle.Back(c.Lowered, c.LoweredKind, throttle.Ramp[0]) {
				back[k] = v
			}
		default:
			for k, v := range heldBy(c) {
				switch old, ok := low[k]; {
				case !ok:
					low[k] = v
				case v != nil && (old == nil || atoi(*v) < atoi(*old)):
					low[k] = v // nil puts a setting back: any lowered value is lower
				}
			}
		}
	}
	for k, v := range back {
		if _, held := low[k]; !held {
			low[k] = v
		}
	}
	return low
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return n
}

// releaseHandChanged hands back to people the throttle settings someone
// changed by hand while a throttle held them: a setting of the app that is
// not what the throttles want it to be is dropped from every record that
// holds it, so that no later step writes over it and the end does not put
// back what was there before; each circuit says which, and why. Nothing is
// decided while any throttle's step is still to be written (the app's
// settings are then not yet what the circuits want).
func (w *switcher) releaseHandChanged(ctx context.Context, f lease.Fence, tu Tuner, app App, cs []Circuit) error {
	var holding []Circuit
	for _, c := range cs {
		if c.Shadow || c.Lowered == nil {
			continue
		}
		if c.Pending() {
			return nil
		}
		if c.State != Closed {
			holding = append(holding, c)
		}
	}
	if len(holding) == 0 {
		return nil
	}
	callCtx, cancel := context.WithTimeout(ctx, w.s.ApplyTimeout)
	settings, err := tu.Settings(callCtx, app)
	cancel()
	if err != nil {
		return fmt.Errorf("app %s: read its settings to check what the throttle holds: %w", app.ID, err)
	}
	want := tuned(cs)
	changed := map[string]string{}
	for _, c := range holding {
		for k := range heldBy(c) {
			have, set := settings[k]
			switch v := want[k]; {
			case v == nil && set:
				changed[k] = fmt.Sprintf("%s set to %s by hand while the throttle held it absent", k, have)
			case v != nil && !set:
				changed[k] = fmt.Sprintf("%s removed by hand while the throttle held it at %s", k, *v)
			case v != nil && have != *v:
				changed[k] = fmt.Sprintf("%s set to %s by hand while the throttle held it at %s", k, have, *v)
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	var errs []error
	for _, c := range holding {
		kept := make(map[string]*string, len(c.Lowered))
		var notes []string
		for k, v := range c.Lowered {
			if why, ok := changed[k]; ok {
				notes = append(notes, why)
				continue
			}
			kept[k] = v
		}
		if len(notes) == 0 {
			continue
		}
		slices.Sort(notes)
		if c.Released != "" {
			notes = append([]string{c.Released}, notes...)
		}
		released := strings.Join(notes, "; ")
		if err := w.store.Circuits.ReleaseLowered(ctx, f, c, kept, released); err != nil {
			errs = append(errs, err)
			continue
		}
		w.s.Logger.Info("throttle handed back settings changed by hand", "circuit", c.ID(), "settings", strings.Join(slices.Sorted(maps.Keys(changed)), ","))
	}
	return errors.Join(errs...)
}

// heldBy is what c holds the app's settings at now: its share of what was
// there before (a tripped circuit keeps the ramp's lowest share). A
// setting the lowest share changed that this share leaves alone (a
// minimum lowered only to stay under a lowered maximum) is as it was
// before again.
func heldBy(c Circuit) map[string]*string {
	share := c.ThrottleShare()
	if share == 0 {
		share = throttle.Ramp[0]
	}
	held := throttle.At(c.Lowered, c.LoweredKind, share)
	if share != throttle.Ramp[0] {
		for k, v := range throttle.Back(c.Lowered, c.LoweredKind, throttle.Ramp[0]) {
			if _, ok := held[k]; !ok {
				held[k] = v
			}
		}
	}
	return held
}
