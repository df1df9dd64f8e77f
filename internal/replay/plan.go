package replay

// The plan of a resume from before the first failure: what each
// partition's checkpoint is moved back to, recorded before the first
// write, so that an instance that dies midway leaves a resume that can
// be run again and finishes the rest.

import (
	"fmt"
	"time"
)

// Step states.
const (
	Pending = ""        // not written yet
	Written = "written" // the checkpoint now says Target
	Refused = "refused" // left as it was, for Reason
)

// Step is one partition's part of the plan.
type Step struct {
	Key       string `json:"k"`
	Partition string `json:"p"`
	Target    Mark   `json:"target"`
	// ETag is the checkpoint blob's as read for the plan: the write is
	// conditional on it, so a checkpoint the host moved since is never
	// overwritten.
	ETag string `json:"etag"`
	// Claimed is when the partition's ownership was last written, as read
	// for the plan: a claim since is a host starting, and refuses it.
	Claimed time.Time `json:"claimed"`
	State   string    `json:"state,omitempty"`
	// Reason says why a step was refused, for people.
	Reason string `json:"reason,omitempty"`
	// Replayed are the events the written checkpoint puts back in front of
	// the function; Lost those of the partition's replay that it does not
	// (past retention, or the step refused).
	Replayed int64 `json:"replayed"`
	Lost     int64 `json:"lost,omitempty"`
}

// Record is an episode's replay: its point, and once a resume from before
// the first failure began, its plan and how it went.
type Record struct {
	AppID, Function string
	Point
	// Planned is when the plan was recorded, by Actor; zero while the
	// episode was not resumed from before the first failure.
	Planned time.Time `json:"planned"`
	Actor   string    `json:"actor,omitempty"`
	Steps   []Step    `json:"steps,omitempty"`
	// Finished is when every step was written or refused and the trigger
	// was asked back on.
	Finished time.Time `json:"finished"`
	// Settled is when the circuit was found resumed some other way (where
	// it stopped, by a trial, or deleted) without this replay finishing:
	// Forsaken events, the skipped ones, are then lost for good.
	Settled  time.Time `json:"settled"`
	Forsaken int64     `json:"forsaken,omitempty"`
	// Version is the stored row's; writes are conditional on it.
	Version string `json:"-"`
	// unsure says the point could not be placed for a reason that may
	// pass (the host's storage did not answer): it is not stored, and the
	// next pass places it again.
	unsure bool
}

// Open says a plan was recorded and not finished: the resume that began
// it stopped midway, and running it again finishes the rest.
func (r Record) Open() bool { return !r.Planned.IsZero() && r.Finished.IsZero() && r.Settled.IsZero() }

// Unsettled says what became of the skipped events is not known yet:
// neither replayed nor found given up.
func (r Record) Unsettled() bool { return r.Finished.IsZero() && r.Settled.IsZero() }

// Skipped are the events the failures before the trip skipped: those to
// replay less those that had succeeded before the first failure, and
// those already past retention.
func (r Record) Skipped() int64 {
	replay, again, lost, _ := r.Totals()
	return max(replay-again, 0) + lost
}

// Outcome adds up the steps: events replayed, lost for good, and the
// partitions refused.
func (r Record) Outcome() (replayed, lost int64, refused []Step) {
	for _, s := range r.Steps {
		replayed += s.Replayed
		lost += s.Lost
		if s.State == Refused {
			refused = append(refused, s)
		}
	}
	// Partitions with no history are lost in full: their replay was never
	// known.
	return replayed, lost, refused
}

// Counts are the events replayed and lost (Outcome without the steps).
func (r Record) Counts() (replayed, lost int64) {
	replayed, lost, _ = r.Outcome()
	return replayed, lost
}

// Summary says how a finished replay went, in words.
func (r Record) Summary() string {
	replayed, lost, refused := r.Outcome()
	s := fmt.Sprintf("replayed %d events from before the first failure on %d partitions", replayed, len(r.Steps)-len(refused))
	if lost > 0 {
		s += fmt.Sprintf("; %d lost for good", lost)
	}
	if len(refused) > 0 {
		s += fmt.Sprintf("; %d partitions left where they stopped", len(refused))
	}
	return s
}
