package jobs

import (
	"strings"
	"time"
)

// Window is a maintenance window. While it lasts, a slot with no run is
// excused rather than missed, and job alerts stay silent.
type Window struct {
	ID        string
	AppID     string // empty: every job
	From      time.Time
	Until     time.Time
	Reason    string
	CreatedBy string
}

// MaxWindow bounds a window: a longer silence is a paused job.
const MaxWindow = 7 * 24 * time.Hour

// Covers reports whether the window silences job j at t.
func (w Window) Covers(j Job, t time.Time) bool {
	return (w.AppID == "" || w.AppID == j.AppID) && !t.Before(w.From) && t.Before(w.Until)
}

// State says where now stands against the window: upcoming, active or
// ended.
func (w Window) State(now time.Time) string {
	switch {
	case now.Before(w.From):
		return "upcoming"
	case now.Before(w.Until):
		return "active"
	}
	return "ended"
}

// Validate returns a message per field that is wrong, or nil.
func (w Window) Validate() map[string]string {
	errs := map[string]string{}
	switch {
	case w.From.IsZero():
		errs["from"] = "Give the start of the window."
	case w.Until.IsZero():
		errs["until"] = "Give the end of the window."
	case !w.Until.After(w.From):
		errs["until"] = "The end must come after the start."
	case w.Until.Sub(w.From) > MaxWindow:
		errs["until"] = "A window lasts at most 7 days; pause the job for longer."
	}
	if strings.TrimSpace(w.Reason) == "" {
		errs["reason"] = "Say why, for whoever wonders about the silence."
	} else if len(w.Reason) > 200 {
		errs["reason"] = "Keep the reason under 200 characters."
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Silenced reports whether any window covers job j at t.
func Silenced(j Job, ws []Window, t time.Time) bool {
	for _, w := range ws {
		if w.Covers(j, t) {
			return true
		}
	}
	return false
}

// Excuse marks the slots of job j that had no run, and fall in one of the
// windows, as skipped: nobody expected them to run.
func Excuse(j Job, results []SlotResult, ws []Window) {
	for i, r := range results {
		if r.Run < 0 && (r.Status == SlotMissed || r.Status == SlotPending) && Silenced(j, ws, r.At) {
			results[i].Status = SlotSkipped
		}
	}
}

// RunRange is the span of run starts that Assess needs to judge job j's
// slots from from to now: a run may start early (clock skew) or be the
// long-running answer to the first slot.
func (j Job) RunRange(from, now time.Time) (time.Time, time.Time) {
	return j.ExpectedFrom(from).Add(-time.Hour), now.Add(time.Minute)
}

// Assess judges job j's slots from from to now against its runs (those
// starting in RunRange), excusing those in maintenance windows. It is what
// the scanner, the job page and the API all show.
func Assess(j Job, runs []Run, ws []Window, from, now time.Time) ([]SlotResult, error) {
	sched, err := j.ParseSchedule()
	if err != nil {
		return nil, err
	}
	results := Scan(sched.Slots(j.ExpectedFrom(from), now.Add(time.Second)), runs, now, Expect{Grace: j.Grace, MaxDuration: j.MaxDuration, MinDuration: j.MinDuration})
	Excuse(j, results, ws)
	return results, nil
}
