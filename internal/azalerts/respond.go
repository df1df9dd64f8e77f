package azalerts

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Actor is who the flip log says tripped a circuit on an alert.
const Actor = "Azure Monitor"

// Responder acts on an alert: a "Fired" alert trips every circuit that
// names its rule and is closed. "Resolved" acts on nothing: resuming is a
// person's, or the circuit's own trial's, once its counts say so.
type Responder struct {
	Circuits func(ctx context.Context) ([]circuit.Circuit, error)
	Trip     func(ctx context.Context, appID, function, actor, reason string) (circuit.Circuit, error)
}

// Respond trips what a "Fired" alert names and returns the circuits it
// tripped. One circuit that cannot be tripped stops no other; their
// errors are joined.
func (r Responder) Respond(ctx context.Context, a Alert) ([]string, error) {
	if a.Condition != Fired || a.RuleID == "" {
		return nil, nil
	}
	cs, err := r.Circuits(ctx)
	if err != nil {
		return nil, err
	}
	reason := fmt.Sprintf("alert rule %s fired", a.Rule)
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
