package jobs

import "time"

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
