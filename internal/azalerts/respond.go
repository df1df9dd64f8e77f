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
// names its rule and is closed. Its rule is its alertRuleID or, when it
// carries none (Azure's published samples do not), the one rule a circuit
// or downstream names that fits its name, subscription and, for a metric
// alert, resource group and type (Match); an alert that fits two rules
// acts on neither. "Resolved" never resumes: it starts a
// half-open trial of the circuits that rule's Fired tripped (and nobody
// since), whose own counts then decide whether they close.
//
// Downstreams naming the rule act first, on all their members in one
// episode; a circuit naming the rule itself then acts alone, unless its
// downstream already switched it off. A rule named "throttle" throttles
// (circuits with a throttle stage) instead of tripping.
type Responder struct {
	Circuits func(ctx context.Context) ([]circuit.Circuit, error)
	Flip     func(ctx context.Context, appID, function, actor, reason string, a circuit.Action) (circuit.Circuit, error)
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

// Outcome is what an alert did: the rule it was taken as, what it acted
// on, and in words how it matched or why it acted on nothing.
type Outcome struct {
	Rule  string   // a rule id; empty: it matched none
	Acted []string // tripped or throttled on Fired, put on trial on Resolved
	Note  string
}

// Respond trips what a "Fired" alert's rule names, or tries what the rule
// tripped when it is "Resolved", and says what it changed. The rule is the
// alert's alertRuleID, or the one rule named by a circuit or downstream
// that fits what the alert says of it (Match). One circuit that cannot be
// changed stops no other; their errors are joined.
func (r Responder) Respond(ctx context.Context, a Alert) (Outcome, error) {
	var errs []error
	ds, err := r.listDownstreams(ctx)
	if err != nil {
		// Downstreams that cannot be read keep no circuit from acting on
		// its own rule; the error is returned with what acted.
		errs = append(errs, err)
	}
	cs, err := r.Circuits(ctx)
	if err != nil {
		return Outcome{Note: "the circuits could not be read"}, errors.Join(append(errs, err)...)
	}
	m := Match(a, named(cs, ds))
	out := Outcome{Rule: m.Rule, Note: m.Note}
	if m.Rule == "" {
		return out, errors.Join(errs...)
	}
	if a.Condition == Resolved {
		out.Acted, err = r.tryResolved(ctx, a, m.Rule, cs, ds)
	} else {
		out.Acted, err = r.fired(ctx, a, m.Rule, cs, ds)
	}
	return out, errors.Join(append(errs, err)...)
}

// named is every rule id the circuits and downstreams name.
func named(cs []circuit.Circuit, ds []downstream.Downstream) []string {
	var ids []string
	for _, c := range cs {
		for _, r := range c.AlertRules {
			id, _ := circuit.RuleAction(r)
			ids = append(ids, id)
		}
	}
	for _, d := range ds {
		for _, r := range d.Rules {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func (r Responder) listDownstreams(ctx context.Context) ([]downstream.Downstream, error) {
	if r.Downstreams == nil || r.Keeper == nil {
		return nil, nil
	}
	return r.Downstreams(ctx)
}

// fired trips (or throttles) what names the rule: the downstreams first,
// then the circuits, read again when a downstream changed its members.
func (r Responder) fired(ctx context.Context, a Alert, rule string, cs []circuit.Circuit, ds []downstream.Downstream) ([]string, error) {
	reason := firedReason(a)
	if a.Description != "" {
		reason += ": " + a.Description
	}
	acted, errs := r.downstreams(ds, rule, func(d downstream.Downstream, dr downstream.Rule) ([]downstream.Outcome, bool, error) {
		if dr.Action == downstream.ActionThrottle {
			_, out, err := r.Keeper.Throttle(ctx, d.Name, Actor, reason)
			return out, err == nil, err
		}
		if d.State.Off() {
			return nil, false, nil
		}
		_, out, err := r.Keeper.Trip(ctx, d.Name, Actor, reason)
		return out, err == nil, err
	})
	if anyNames(ds, rule) {
		// What a downstream did to its members is read, not assumed.
		var err error
		if cs, err = r.Circuits(ctx); err != nil {
			return acted, errors.Join(append(errs, err)...)
		}
	}
	var tripped []string
	for _, c := range cs {
		action, ok := c.AlertRuleAction(rule)
		if !ok || c.State.TriggerOff() || c.State == circuit.Throttled {
			continue
		}
		var err error
		if action == downstream.ActionThrottle {
			if !c.Throttles() {
				continue
			}
			_, err = r.Flip(ctx, c.AppID, c.Function, Actor, reason, circuit.Throttling)
		} else {
			_, err = r.Flip(ctx, c.AppID, c.Function, Actor, reason, circuit.Tripping)
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

// anyNames says a downstream names the rule.
func anyNames(ds []downstream.Downstream, rule string) bool {
	return slices.ContainsFunc(ds, func(d downstream.Downstream) bool { _, ok := d.RuleFor(rule); return ok })
}

// downstreams calls act on each downstream naming the rule, and lists what
// acted ("downstream:<name>", then the members it changed).
func (r Responder) downstreams(ds []downstream.Downstream, rule string, act func(downstream.Downstream, downstream.Rule) ([]downstream.Outcome, bool, error)) ([]string, []error) {
	var acted []string
	var errs []error
	for _, d := range ds {
		dr, ok := d.RuleFor(rule)
		if !ok {
			continue
		}
		out, did, err := act(d, dr)
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
func (r Responder) tryResolved(ctx context.Context, a Alert, rule string, cs []circuit.Circuit, ds []downstream.Downstream) ([]string, error) {
	acted, errs := r.downstreams(ds, rule, func(d downstream.Downstream, _ downstream.Rule) ([]downstream.Outcome, bool, error) {
		if !d.State.Off() || !strings.HasPrefix(d.Reason, firedReason(a)) {
			return nil, false, nil
		}
		_, out, err := r.Keeper.Resolved(ctx, d.Name, Actor, fmt.Sprintf("alert rule %s resolved", a.Rule))
		return out, err == nil, err
	})
	if anyNames(ds, rule) {
		// What a downstream did to its members is read, not assumed.
		var err error
		if cs, err = r.Circuits(ctx); err != nil {
			return acted, errors.Join(append(errs, err)...)
		}
	}
	var tried []string
	for _, c := range cs {
		if !c.NamesAlertRule(rule) || c.State != circuit.ForcedOpen || !strings.HasPrefix(c.Reason, firedReason(a)) || c.Downstream != "" {
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
		if _, err := r.Flip(ctx, c.AppID, c.Function, Actor, reason, circuit.Trying); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.ID(), err))
			continue
		}
		tried = append(tried, c.ID())
	}
	slices.Sort(tried)
	return append(acted, tried...), errors.Join(errs...)
}
