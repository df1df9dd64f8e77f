package jobs

import "time"

// StatusOf sums up a job's slots, as Scan judged them, into its status now.
func StatusOf(j Job, results []SlotResult, everRan bool, now time.Time) Status {
	if j.Paused {
		return Paused
	}
	due := false // the latest slot is due and within its grace
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
		case SlotUnreported:
			return Up // the host says it ran: the report went missing, not the run
		case SlotMissed:
			return Missing
		case SlotFailed, SlotOverran:
			return Failing
		}
		if due {
			return Late // the previous slot went well; this one is on its way
		}
		return Up // ok, late, running, overlapping
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
