package circuit

import (
	"errors"
	"fmt"
)

// ErrConflictRetries is returned when a circuit kept changing under an
// action; the person should look again.
var ErrConflictRetries = errors.New("circuit: the circuit kept changing; look at it again and retry")

// Why a resume link no longer acts.
var (
	ErrEpisodeEnded   = errors.New("circuit: this link belongs to an episode of the circuit that has ended: it was resumed or changed since")
	ErrRecreated      = errors.New("circuit: the circuit this link was sent for was deleted; the one there now is another")
	ErrNotRecipient   = errors.New("circuit: the address this link was sent to no longer receives this circuit's alerts")
	ErrForcedByHand   = errors.New("circuit: an operator switched this trigger off by hand; only an operator signed in to Fusebox can resume it")
	ErrNotLinkAction  = errors.New("circuit: links resume only circuits the evaluator opened")
	errLinkCheckTypes = []error{ErrEpisodeEnded, ErrRecreated, ErrNotRecipient, ErrForcedByHand, ErrNotLinkAction}
)

// Errors of settings changes.
var (
	ErrExists    = errors.New("circuit: a circuit for this function already exists")
	ErrStillOpen = errors.New("circuit: the trigger is off; resume the circuit before deleting it, or the function stays disabled")
	ErrSwitching = errors.New("circuit: the trigger is being switched; wait a moment and delete it then")
)

// ErrNotFound is what a store's error wraps for a missing app or circuit.
var ErrNotFound = errors.New("circuit: not found")

// ErrNoApp and ErrNoCircuit are an app and a circuit that do not exist;
// both are ErrNotFound too.
var (
	ErrNoApp     = fmt.Errorf("circuit: no such app (%w)", ErrNotFound)
	ErrNoCircuit = fmt.Errorf("circuit: no such circuit (%w)", ErrNotFound)
)

// ErrNothingToAcknowledge is an acknowledgement of a circuit whose trigger is on.
var ErrNothingToAcknowledge = errors.New("circuit: the trigger is on; there is nothing to acknowledge")

// ErrNoDrift is an adopt or override of a circuit without drift.
var ErrNoDrift = errors.New("circuit: there is no drift to settle")

// ErrConflict is what a store's error wraps when a conditional write lost
// a race: the caller should reread and decide again.
var ErrConflict = errors.New("circuit: changed concurrently")
