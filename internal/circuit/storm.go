package circuit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fusebox/fusebox/internal/audit"
)

// MaxStorm bounds how many circuits one storm action names.
const MaxStorm = 100

// StormOutcome is what a storm action did to one circuit.
type StormOutcome struct {
	ID      string // app/function
	Circuit Circuit
	Err     error
}

// ErrNotAnID is a name that is not "app/function".
var ErrNotAnID = errors.New("circuit: not a circuit: name it as app/function")

// CheckStorm says what is wrong with a storm action, or "": one to
// MaxStorm circuits, each named app/function, and a reason to resume
// (acknowledging needs none: the triggers stay off).
func CheckStorm(ids []string, reason string, acknowledge bool) string {
	switch {
	case len(ids) == 0:
		return "Pick at least one circuit."
	case len(ids) > MaxStorm:
		return fmt.Sprintf("Pick at most %d circuits at a time.", MaxStorm)
	case !acknowledge:
		if msg := audit.CheckReason(reason, "every flip log"); msg != "" {
			return msg
		}
	}
	for _, id := range ids {
		if _, _, ok := SplitID(id); !ok {
			return "Each circuit must be named app/function."
		}
	}
	return ""
}

// Storms are the apps with more than one circuit's trigger off, by app,
// with how many are off: a shared dependency failing, whose circuits are
// best resumed together.
func Storms(cs []Circuit) map[string]int {
	off := map[string]int{}
	for _, c := range cs {
		if c.State.TriggerOff() {
			off[c.AppID]++
		}
	}
	for app, n := range off {
		if n < 2 {
			delete(off, app)
		}
	}
	return off
}

// SplitID reads "app/function".
func SplitID(id string) (appID, function string, ok bool) {
	appID, function, ok = strings.Cut(id, "/")
	return appID, function, ok && ValidAppID(appID) && function != "" && !strings.Contains(function, "/")
}

// ResumeEach resumes every circuit named, one after another, with one
// reason: when a shared dependency fails, several circuits of an app trip
// together and are resumed together. Each still gets its own flip, audit
// line and resume notice; one that cannot be resumed (closed already,
// gone) is said so and stops none of the others. acknowledge stops the
// open episodes' reminders instead, leaving the triggers off.
func (s *Service) ResumeEach(ctx context.Context, ids []string, actor, reason string, acknowledge bool) []StormOutcome {
	out := make([]StormOutcome, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		o := StormOutcome{ID: id}
		app, fn, ok := SplitID(id)
		switch {
		case !ok:
			o.Err = ErrNotAnID
		case acknowledge:
			o.Circuit, o.Err = s.Acknowledge(ctx, app, fn, actor)
		default:
			o.Circuit, o.Err = s.Flip(ctx, app, fn, actor, reason, Resuming)
		}
		out = append(out, o)
	}
	return out
}
