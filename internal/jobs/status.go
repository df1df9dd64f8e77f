package jobs

import (
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
)

// StatusOf sums up a job's slots, as Scan judged them, into its status now.
// A missed slot makes it missing at once. Failed runs (failed, overran,
// too fast) make it failing only once FailAfter of them come in a row; a
// failing job is up again only after RecoverAfter good runs in a row. The
// job's stored status says whether it was failing.
func StatusOf(j Job, results []SlotResult, everRan bool, now time.Time) Status {
	if j.Paused {
		return Paused
	}
	failAfter, recoverAfter := max(j.FailAfter, 1), max(j.RecoverAfter, 1)
	due := false // the latest slot is due and within its grace
	bad, good := 0, 0
	decided := false
scan:
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
		case SlotMissed:
			if bad == 0 && good == 0 {
				return Missing
			}
		case SlotFailed, SlotOverran, SlotTooFast:
			if good == 0 {
				bad++
				continue
			}
		case SlotRunning:
			if bad == 0 && good == 0 {
				decided = true // the newest run is on its way: it has not failed
				break scan
			}
			continue
		default: // ok, late, overlapping, ran but not reported
			if bad == 0 {
				good++
				continue
			}
		}
		break scan // the run of like outcomes ended
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
func Why(j Job, results []SlotResult, st Status) string {
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
