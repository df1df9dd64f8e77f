package jobs

import "time"

// StatusOf sums up a job's slots, as Scan judged them, into its status now.
func StatusOf(j Job, results []SlotResult, everRan bool, now time.Time) Status {
	if j.Paused {
		return Paused
	}
	for i := len(results) - 1; i >= 0; i-- {
		r := results[i]
		switch r.Status {
		case SlotPending:
			if !now.Before(r.At) {
				return Late // due, within its grace
			}
			continue // not due yet
		case SlotMissed:
			return Missing
		case SlotFailed, SlotOverran:
			return Failing
		default: // ok, late, running, overlapping
			return Up
		}
	}
	if everRan {
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
		case SlotPending, SlotRunning:
			continue
		case SlotOK, SlotLate, SlotOverlapping:
			good++
		}
		due++
	}
	if due == 0 {
		return -1
	}
	return float64(good) / float64(due)
}
