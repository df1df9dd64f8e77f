package azalerts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Actor is who the flip log says tripped a circuit on an alert.
const Actor = "Azure Monitor"

// Responder acts on an alert: a "Fired" alert trips every circuit that
// names its rule and is closed. "Resolved" never resumes: it starts a
// half-open trial of the circuits that rule's Fired tripped (and nobody
// since), whose own counts then decide whether they close.
type Responder struct {
	Circuits func(ctx context.Context) ([]circuit.Circuit, error)
	Trip     func(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
	Trial    func(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
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
	cs, err := r.Circuits(ctx)
	if err != nil {
		return nil, err
	}
	reason := firedReason(a)
	if a.Description != "" {
		reason += ": " + a.Description
	}
	var tripped []string
	var errs []error
	for _, c := range cs {
		if !c.NamesAlertRule(a.RuleID) || c.State.TriggerOff() {
			continue
		}
		if _, err := r.Trip(ctx, c.AppID, c.Function, Actor, reason); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.ID(), err))
			continue
		}
		tripped = append(tripped, c.ID())
	}
	slices.Sort(tripped)
	return tripped, errors.Join(errs...)
}

// tryResolved starts a trial of each circuit naming the rule that is still
// off from that rule's Fired: not one a person tripped, or that opened on
// its own counts since.
func (r Responder) tryResolved(ctx context.Context, a Alert) ([]string, error) {
	cs, err := r.Circuits(ctx)
	if err != nil {
		return nil, err
	}
	var tried []string
	var errs []error
	for _, c := range cs {
		if !c.NamesAlertRule(a.RuleID) || c.State != circuit.ForcedOpen || !strings.HasPrefix(c.Reason, firedReason(a)) {
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
	return tried, errors.Join(errs...)
}
