package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
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
	// Recurs makes the window recurring: it opens at each slot of this
	// cron or NCRONTAB expression in TimeZone and lasts Duration, between
	// From and Until. Empty: one window, From to Until.
	Recurs   string
	TimeZone string
	Duration time.Duration
}

// Recurring reports whether the window repeats.
func (w Window) Recurring() bool { return w.Recurs != "" }

func (w Window) schedule() (Schedule, error) {
	return Job{Schedule: w.Recurs, TimeZone: w.TimeZone}.ParseSchedule()
}

// Next lists up to n openings of a recurring window from now on (one that
// is open now first), within its period.
func (w Window) Next(now time.Time, n int) []time.Time {
	if !w.Recurring() {
		return nil
	}
	s, err := w.schedule()
	if err != nil {
		return nil
	}
	var out []time.Time
	from := now.Add(-w.Duration + time.Nanosecond)
	if from.Before(w.From) {
		from = w.From
	}
	for len(out) < n {
		at, ok := s.Next(from)
		if !ok || !at.Before(w.Until) {
			break
		}
		out = append(out, at)
		from = at.Add(time.Second)
	}
	return out
}

// MaxWindow bounds a window: a longer silence is a paused job.
const MaxWindow = 7 * 24 * time.Hour

// Covers reports whether the window silences job j at t.
func (w Window) Covers(j Job, t time.Time) bool { return w.AppliesTo(j) && w.open(t) }

// AppliesTo reports whether the window is for j: for every job, or for
// the jobs of j's app.
func (w Window) AppliesTo(j Job) bool { return w.AppID == "" || w.AppID == j.AppID }

// Upcoming returns the windows that apply to j and have not ended by now.
func Upcoming(j Job, ws []Window, now time.Time) []Window {
	var out []Window
	for _, w := range ws {
		if w.AppliesTo(j) && w.Until.After(now) {
			out = append(out, w)
		}
	}
	return out
}

// open reports whether the window is open at t: within its period, and for
// a recurring one within Duration after one of its openings.
func (w Window) open(t time.Time) bool {
	if t.Before(w.From) || !t.Before(w.Until) {
		return false
	}
	if !w.Recurring() {
		return true
	}
	s, err := w.schedule()
	if err != nil {
		return false
	}
	// An opening in (t − Duration, t] covers t.
	at, ok := s.Prev(t)
	return ok && at.After(t.Add(-w.Duration)) && !at.Before(w.From)
}

// State says where now stands against the window: upcoming, active or
// ended.
func (w Window) State(now time.Time) string {
	switch {
	case !now.Before(w.Until):
		return "ended"
	case w.open(now):
		return "active"
	case w.Recurring():
		return "recurring"
	case now.Before(w.From):
		return "upcoming"
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
	case !w.Recurring() && w.Until.Sub(w.From) > MaxWindow:
		errs["until"] = "A window lasts at most 7 days; pause the job for longer."
	}
	if w.Recurring() {
		s, err := w.schedule()
		switch {
		case err != nil:
			errs["recurs"] = strings.TrimPrefix(err.Error(), "jobs: ")
		case w.Duration < time.Minute || w.Duration > MaxWindow:
			errs["duration"] = "Each opening lasts from 1 minute to 7 days, such as 2h."
		default:
			if msg := OpeningsProblem(s, w.From, w.Duration); msg != "" {
				errs["recurs"] = msg
			}
		}
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

// MaxRunsPerSlot bounds the runs a job keeps per expected slot: a run
// by hand or a retry beside the slot's own is usual, thousands are a
// flood (Recorder counts the rest, not stores them).
const MaxRunsPerSlot = 10

// MaxRunsRead bounds the runs one judgement of a job reads: a job every
// minute has 10,080 slots a week.
const MaxRunsRead = 12_000

// RunsToRead is how many of its newest runs judging job j's slots from
// from to now reads: what its slots may hold, and a margin.
func (j Job) RunsToRead(from, now time.Time) int {
	sched, err := j.ParseSchedule()
	if err != nil {
		return 100
	}
	// The slots are counted one by one up to what MaxRunsRead holds,
	// never listed.
	n, end := 0, now.Add(time.Second)
	for at := j.ExpectedFrom(from); n*MaxRunsPerSlot < MaxRunsRead; n++ {
		next, ok := sched.Next(at)
		if !ok || !next.Before(end) {
			break
		}
		at = next.Add(time.Nanosecond)
	}
	return min(MaxRunsRead, (n+1)*MaxRunsPerSlot+50)
}

// ReadFrom is where a judgement of slots from from may begin when the
// runs read (oldest first) may not be all: at the oldest run read, so that
// no slot before it reads as missed for runs left unread.
func ReadFrom(from time.Time, runs []Run, more bool) time.Time {
	if more && len(runs) > 0 && runs[0].Start.After(from) {
		return runs[0].Start
	}
	return from
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

// gapsLooked bounds how many openings OpeningsProblem compares.
const gapsLooked = 200

// OpeningsProblem says what is wrong with a recurring window's openings
// from from on, or "": it must open within five years, at most once a
// minute, and not again before the last opening ended (a window that
// opens more often than it lasts is one long window written as many).
// It looks at the first openings only, at a bounded cost.
func OpeningsProblem(s Schedule, from time.Time, lasts time.Duration) string {
	prev, ok := s.Next(from)
	if !ok {
		return "This expression never fires within five years: check the day and month fields."
	}
	for range gapsLooked {
		next, ok := s.Next(prev.Add(time.Second))
		if !ok {
			break
		}
		switch gap := next.Sub(prev); {
		case gap < time.Minute:
			return fmt.Sprintf("This expression opens again %s after it opened: a window opens at most once a minute.", spoken.Duration(gap))
		case gap < lasts:
			return fmt.Sprintf("This expression opens again %s after it opened, before the window of %s ends: make the window shorter or the schedule sparser.", spoken.Duration(gap), spoken.Duration(lasts))
		}
		prev = next
	}
	return ""
}
