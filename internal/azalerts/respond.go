package azalerts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
)

// Actor is who the flip log says tripped a circuit on an alert.
const Actor = "Azure Monitor"

// Responder acts on an alert: a "Fired" alert trips every circuit that
// names its rule and is closed. "Resolved" never resumes: it starts a
// half-open trial of the circuits that rule's Fired tripped (and nobody
// since), whose own counts then decide whether they close.
//
// Downstreams naming the rule act first, on all their members in one
// episode; a circuit naming the rule itself then acts alone, unless its
// downstream already switched it off. A rule named "throttle" throttles
// (circuits with a throttle stage) instead of tripping.
type Responder struct {
	Circuits func(ctx context.Context) ([]circuit.Circuit, error)
	Trip     func(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
	Trial    func(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
	Throttle func(ctx context.Context, appID, function, actor, reason, mark string) (circuit.Circuit, error)
	// Downstreams, if set, lists the downstreams; Keeper acts on them.
	Downstreams func(ctx context.Context) ([]downstream.Downstream, error)
	Keeper      Keeper
}

// Keeper acts on downstreams (downstream.Keeper).
type Keeper interface {
	Trip(ctx context.Context, name, actor, reason string) (downstream.Downstream, []downstream.Outcome, error)
	Throttle(ctx context.Context, name, actor, reason string) (downstream.Downstream, []downstream.Outcome, error)
	Resolved(ctx context.Context, name, actor, reason string) (downstream.Downstream, []downstream.Outcome, error)
	// WaitForProbe has a circuit with a probe wait for its good answers
	// before its trial.
	WaitForProbe(ctx context.Context, c circuit.Circuit, reason string) error
}

// firedReason is the reason a Fired alert trips with; Resolved looks for
// it to find what that rule tripped.
func firedReason(a Alert) string { return "alert rule " + a.Rule + " fired" }

// Respond trips what a "Fired" alert names, or tries what the rule tripped
// when it is "Resolved", and returns the circuits it changed. One circuit
// that cannot be changed stops no other; their errors are joined.
func (r Responder) Respond(ctx context.Context, a Alert) ([]string, error) {
	if a.RuleID == "" {
		return nil, nil
	}
	if a.Condition == Resolved {
		return r.tryResolved(ctx, a)
	}
	reason := firedReason(a)
	if a.Description != "" {
		reason += ": " + a.Description
	}
	acted, errs := r.downstreams(ctx, a, func(d downstream.Downstream, rule downstream.Rule) ([]downstream.Outcome, bool, error) {
		if rule.Action == downstream.ActionThrottle {
			_, out, err := r.Keeper.Throttle(ctx, d.Name, Actor, reason)
			return out, err == nil, err
		}
		if d.State.Off() {
			return nil, false, nil
		}
		_, out, err := r.Keeper.Trip(ctx, d.Name, Actor, reason)
		return out, err == nil, err
	})
	cs, err := r.Circuits(ctx)
	if err != nil {
		return acted, errors.Join(append(errs, err)...)
	}
	var tripped []string
	for _, c := range cs {
		action, ok := c.AlertRuleAction(a.RuleID)
		if !ok || c.State.TriggerOff() || c.State == circuit.Throttled {
			continue
		}
		var err error
		if action == downstream.ActionThrottle {
			if !c.Throttles() {
				continue
			}
			_, err = r.Throttle(ctx, c.AppID, c.Function, Actor, reason, "")
		} else {
			_, err = r.Trip(ctx, c.AppID, c.Function, Actor, reason)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.ID(), err))
			continue
		}
		tripped = append(tripped, c.ID())
	}
	slices.Sort(tripped)
	return append(acted, tripped...), errors.Join(errs...)
}

// downstreams calls act on each downstream naming the alert's rule, and
// lists what acted ("downstream:<name>", then the members it changed).
func (r Responder) downstreams(ctx context.Context, a Alert, act func(downstream.Downstream, downstream.Rule) ([]downstream.Outcome, bool, error)) ([]string, []error) {
	if r.Downstreams == nil || r.Keeper == nil {
		return nil, nil
	}
	ds, err := r.Downstreams(ctx)
	if err != nil {
		return nil, []error{err}
	}
	var acted []string
	var errs []error
	for _, d := range ds {
		rule, ok := d.RuleFor(a.RuleID)
		if !ok {
			continue
		}
		out, did, err := act(d, rule)
		if err != nil {
			errs = append(errs, fmt.Errorf("downstream %s: %w", d.Name, err))
			continue
		}
		if did {
			acted = append(acted, alerts.DownstreamSubject(d.Name))
		}
		for _, o := range out {
			if o.Err != nil {
				errs = append(errs, fmt.Errorf("downstream %s: %s: %w", d.Name, o.Member, o.Err))
			} else {
				acted = append(acted, o.Member)
			}
		}
	}
	return acted, errs
}

// tryResolved starts a trial of each circuit naming the rule that is still
// off from that rule's Fired: not one a person tripped, or that opened on
// its own counts since.
func (r Responder) tryResolved(ctx context.Context, a Alert) ([]string, error) {
	acted, errs := r.downstreams(ctx, a, func(d downstream.Downstream, _ downstream.Rule) ([]downstream.Outcome, bool, error) {
		if !d.State.Off() || !strings.HasPrefix(d.Reason, firedReason(a)) {
			return nil, false, nil
		}
		_, out, err := r.Keeper.Resolved(ctx, d.Name, Actor, fmt.Sprintf("alert rule %s resolved", a.Rule))
		return out, err == nil, err
	})
	cs, err := r.Circuits(ctx)
	if err != nil {
		return acted, errors.Join(append(errs, err)...)
	}
	var tried []string
	for _, c := range cs {
		if !c.NamesAlertRule(a.RuleID) || c.State != circuit.ForcedOpen || !strings.HasPrefix(c.Reason, firedReason(a)) || c.Downstream != "" {
			continue
		}
		if c.Probe.URL != "" && r.Keeper != nil {
			// The trial waits for the circuit's probe (the keeper's pass).
			if err := r.Keeper.WaitForProbe(ctx, c, fmt.Sprintf("alert rule %s resolved", a.Rule)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.ID(), err))
				continue
			}
			tried = append(tried, c.ID())
			continue
		}
		reason := fmt.Sprintf("alert rule %s resolved: trigger on for a trial; the circuit's own counts decide", a.Rule)
		if _, err := r.Trial(ctx, c.AppID, c.Function, Actor, reason); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.ID(), err))
			continue
		}
		tried = append(tried, c.ID())
	}
	slices.Sort(tried)
	return append(acted, tried...), errors.Join(errs...)
}
