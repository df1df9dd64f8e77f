package circuit

import "time"

// Decision is what one circuit's counts make of it, weighed against its
// app's guardrail by what the decider knows of the app.
type Decision struct {
	Next Circuit
	Flip *Flip // nil: nothing changes
	// Guarded says the guardrail limits this trip and admits it on what
	// the decider counted: storage must weigh it again (TransitionGuarded),
	// since another instance may be tripping the app's circuits at once.
	Guarded bool
	// Held says the guardrail keeps this trip back: Next and Flip hold it.
	Held bool
}

// Decide is the one decision the evaluator's tick and its report check
// share: Evaluate the circuit's counts, and when that trips a trigger the
// app's guardrail limits, admit the trip only while fewer than the limit
// of the app's total circuits are off (off of them, this trip not counted).
func Decide(c Circuit, n Counts, now time.Time, g Guardrail, off, total int) Decision {
	next, fl := Evaluate(c, n, now)
	limit, weighs := g.weighs(c, fl, total)
	switch {
	case !weighs:
		return Decision{Next: next, Flip: fl}
	case off+1 > limit:
		held, hf := Hold(c, *fl, off, limit)
		return Decision{Next: held, Flip: &hf, Held: true}
	}
	return Decision{Next: next, Flip: fl, Guarded: true}
}

// weighs says whether the guardrail limits fl, a transition of c in an
// app of total circuits, and its limit then: only a trip that switches a
// trigger off is weighed, and never a shadow circuit's.
func (g Guardrail) weighs(c Circuit, fl *Flip, total int) (limit int, weighs bool) {
	if fl == nil || !fl.To.TriggerOff() || fl.From.TriggerOff() || c.Shadow {
		return 0, false
	}
	limit = g.Limit(total)
	return limit, limit >= 0
}
