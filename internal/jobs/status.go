package jobs

import (
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
)

// StatusOf sums up a job's slots, as Scan judged them, and its runs off
// schedule into its status now, as Healthchecks judges a check on each
// signal. A missed slot makes it missing at once. Failed runs (failed,
// overran, too fast) make it failing once FailAfter of them come in a
// row, whether they answered a slot or came off schedule (a /fail ping
// hours after the slot's run); a failing job is up again only after
// RecoverAfter good runs in a row. runs are those given to Scan. The
// job's stored status says whether it was failing.
func StatusOf(j Job, results []SlotResult, runs []Run, everRan bool, now time.Time) Status {
	if j.Paused {
		return Paused
	}
	failAfter, recoverAfter := max(j.FailAfter, 1), max(j.RecoverAfter, 1)
	due := false // the latest slot is due and within its grace
	bad, good := 0, 0
	decided := false
	// step takes one outcome, newest first; false ends the run of like
	// outcomes.
	step := func(s SlotStatus) (missing, more bool) {
		switch s {
		case SlotMissed:
			return bad == 0 && good == 0, false
		case SlotFailed, SlotOverran, SlotTooFast:
			if good == 0 {
				bad++
				return false, true
			}
		case SlotRunning:
			if bad == 0 && good == 0 {
				decided = true // the newest run is on its way: it has not failed
				return false, false
			}
			return false, true
		default: // ok, late, overlapping, ran but not reported
			if bad == 0 {
				good++
				return false, true
			}
		}
		return false, false
	}
	walk := func() (missing bool) {
		for i := len(results) - 1; i >= 0; i-- {
			r := results[i]
			switch r.Status {
			case SlotPending:
				if !now.Before(r.At) {
					due = true
				}
				continue // a slot still in its grace says nothing yet
			case SlotSkipped:
				continue // excused by a maintenance window
			}
			for k := min(r.Last, len(runs)-1); r.Run >= 0 && k > r.Run; k-- {
				if _, more := step(offSchedule(runs[k])); !more {
					return false
				}
			}
			missing, more := step(r.Status)
			if missing || !more {
				return missing // the run of like outcomes ended
			}
		}
		// Runs before the first slot's window (a job made today whose
		// first slot is tomorrow) count as runs too.
		for k := firstWindowRun(results, runs) - 1; k >= 0; k-- {
			if _, more := step(offSchedule(runs[k])); !more {
				return false
			}
		}
		return false
	}
	if walk() {
		return Missing
	}
	switch {
	case bad >= failAfter:
		return Failing
	case bad > 0 && j.Status == Failing:
		return Failing // not recovered: a failure again
	case good > 0 && j.Status == Failing && good < recoverAfter:
		return Failing // recovering: not enough good runs in a row yet
	}
	if good > 0 || bad > 0 || decided {
		if due {
			return Late // the previous slot went well; this one is on its way
		}
		return Up
	}
	switch {
	case due:
		return Late
	case everRan:
		return Up
	}
	return New
}

// firstWindowRun is the index of the first run that starts in or after
// the first slot's window (as Scan reckons it): runs before it answer no
// slot.
func firstWindowRun(results []SlotResult, runs []Run) int {
	if len(results) == 0 {
		return len(runs)
	}
	early := 30 * time.Second
	if len(results) > 1 {
		early = min(early, results[1].At.Sub(results[0].At)/10)
	}
	start := results[0].At.Add(-early)
	for k, run := range runs {
		if !run.Start.Before(start) {
			return k
		}
	}
	return len(runs)
}

// offScheduleWhy says what the newest run off schedule made of a job, if
// it decided its status: "" otherwise.
func offScheduleWhy(results []SlotResult, runs []Run, st Status) string {
	for i := len(results) - 1; i >= 0; i-- {
		r := results[i]
		if r.Status == SlotPending || r.Status == SlotSkipped {
			continue
		}
		if r.Run < 0 || r.Last <= r.Run || r.Last >= len(runs) {
			return ""
		}
		run := runs[r.Last]
		at := run.Start.UTC().Format("Mon 2 Jan 15:04:05 MST")
		switch {
		case st == Failing && run.Failed:
			return fmt.Sprintf("a run off schedule failed at %s (after the slot of %s)", at, r.At.UTC().Format("15:04"))
		case st == Up && !run.Failed && !run.End.IsZero():
			return fmt.Sprintf("a run off schedule went well at %s", at)
		}
		return ""
	}
	return ""
}

// offSchedule is what a run that answered no slot says: failed, on its
// way, or went well.
func offSchedule(run Run) SlotStatus {
	switch {
	case run.Failed:
		return SlotFailed
	case run.End.IsZero():
		return SlotRunning
	}
	return SlotOK
}

// SuccessRate is the share of due slots that ran and succeeded, or -1 when
// none was due.
func SuccessRate(results []SlotResult) float64 {
	due, good := 0, 0
	for _, r := range results {
		switch r.Status {
		case SlotPending, SlotRunning, SlotSkipped:
			continue
		case SlotOK, SlotLate, SlotOverlapping, SlotUnreported:
			good++
		}
		due++
	}
	if due == 0 {
		return -1
	}
	return float64(good) / float64(due)
}

// Why says, for the flip log, what made a job's status: the latest slots
// that decided it.
func Why(j Job, results []SlotResult, runs []Run, st Status) string {
	if why := offScheduleWhy(results, runs, st); why != "" {
		return why
	}
	latest := func(match func(SlotStatus) bool) (SlotResult, int, bool) {
		n := 0
		var first SlotResult
		for i := len(results) - 1; i >= 0; i-- {
			r := results[i]
			if r.Status == SlotPending || r.Status == SlotSkipped {
				continue
			}
			if !match(r.Status) {
				break
			}
			if n == 0 {
				first = r
			}
			n++
		}
		return first, n, n > 0
	}
	at := func(t time.Time) string { return t.UTC().Format("Mon 2 Jan 15:04 MST") }
	switch st {
	case Missing:
		if r, n, ok := latest(func(s SlotStatus) bool { return s == SlotMissed }); ok {
			if n > 1 {
				return fmt.Sprintf("%d slots in a row had no run, the latest %s (grace %s)", n, at(r.At), spoken.Duration(j.Grace))
			}
			return fmt.Sprintf("the slot of %s had no run within its grace of %s", at(r.At), spoken.Duration(j.Grace))
		}
	case Failing:
		if r, n, ok := latest(func(s SlotStatus) bool { return s == SlotFailed || s == SlotOverran || s == SlotTooFast }); ok {
			if n == 1 {
				return fmt.Sprintf("the run of %s: %s", at(r.At), r.Status)
			}
			return fmt.Sprintf("%d failed runs in a row, the latest of %s: %s (it alerts after %d)", n, at(r.At), r.Status, max(j.FailAfter, 1))
		}
	case Up:
		if r, n, ok := latest(func(s SlotStatus) bool {
			return s == SlotOK || s == SlotLate || s == SlotOverlapping || s == SlotUnreported || s == SlotRunning
		}); ok {
			if n > 1 {
				return fmt.Sprintf("%d good runs in a row, the latest %s", n, at(r.At))
			}
			return fmt.Sprintf("the slot of %s ran (%s)", at(r.At), r.Status)
		}
	case Late:
		return "the latest slot is due and within its grace"
	}
	return "as its slots stand"
}
