package jobs

import (
	"fmt"
	"time"
)

// Run is one reported run of a job.
type Run struct {
	ID     string
	Start  time.Time
	End    time.Time // zero while it runs
	Failed bool
}

// SlotStatus is what became of one expected run.
type SlotStatus int

const (
	// SlotPending: not due yet (the grace period has not passed).
	SlotPending SlotStatus = iota
	// SlotOK: a run started within the grace period and succeeded.
	SlotOK
	// SlotLate: the run started after the grace period but before the next slot.
	SlotLate
	// SlotMissed: no run came before the next slot (or by now, past the grace).
	SlotMissed
	// SlotFailed: the run reported failure.
	SlotFailed
	// SlotRunning: the run started and has not finished, within its expected duration.
	SlotRunning
	// SlotOverran: the run took longer than the expected maximum duration.
	SlotOverran
	// SlotOverlapping: the run started while the previous one was still running.
	SlotOverlapping
	// SlotSkipped: no run, during a maintenance window; not a gap.
	SlotSkipped
	// SlotUnreported: no run was reported, but the Functions host's own
	// timer status says the timer fired in the slot: ran, not reported.
	SlotUnreported
	// SlotTooFast: the run ended sooner than the job's minimum duration.
	SlotTooFast
)

var slotNames = [...]string{"pending", "ok", "late", "missed", "failed", "running", "overran", "overlapping", "skipped", "ran, not reported", "too fast"}

func (s SlotStatus) String() string {
	if s < 0 || int(s) >= len(slotNames) {
		return fmt.Sprintf("slot(%d)", int(s))
	}
	return slotNames[s]
}

// SlotResult is one expected run and what became of it.
type SlotResult struct {
	At     time.Time
	Status SlotStatus
	Run    int // index into the runs given to Scan, or -1
	// Last is the index of the last run that started in the slot's
	// window: runs Run+1 to Last came off schedule (a run by hand, a
	// retry, a /fail ping hours after the slot's run). The slot is judged
	// by its first run; StatusOf counts every one of them in order.
	Last int
}

// Expect is what a job promises about its runs.
type Expect struct {
	Grace       time.Duration // how late a run may start and still be on time
	MaxDuration time.Duration // how long a run may take; 0: no limit
	MinDuration time.Duration // how short a run may be; 0: no limit
}

// Scan matches runs to slots and says what became of each slot, as of now.
// Both slots and runs must be in time order. A run belongs to the slot
// whose window it starts in: from a little before the slot (clock skew, at
// most 30 s and a tenth of the gap to the next slot) to the same point
// before the next slot. It is a pure function: the same inputs give the
// same answer at any wall time.
func Scan(slots []time.Time, runs []Run, now time.Time, e Expect) []SlotResult {
	out := make([]SlotResult, len(slots))
	// Work in nanoseconds: a year of minutely slots is half a million
	// comparisons, and time.Time's are not free.
	at := make([]int64, len(slots))
	for i, s := range slots {
		at[i] = s.UnixNano()
	}
	const maxEarly = int64(30 * time.Second)
	early := func(i int) int64 {
		if i+1 < len(at) {
			return min(maxEarly, (at[i+1]-at[i])/10)
		}
		return maxEarly
	}
	nowN, grace := now.UnixNano(), int64(e.Grace)
	r := 0
	var prevEnd int64    // end of the previous matched run, 0 when none
	prevRunning := false // the previous matched run had not ended
	for i := range at {
		start := at[i] - early(i)
		end := int64(1<<63 - 1) // open to the future
		if i+1 < len(at) {
			end = at[i+1] - early(i+1)
		}
		for r < len(runs) && runs[r].Start.UnixNano() < start {
			r++ // a run before this window belongs to no slot
		}
		res := SlotResult{At: slots[i], Run: -1, Last: -1}
		switch {
		case r < len(runs) && runs[r].Start.UnixNano() < end:
			run := runs[r]
			res.Run = r
			res.Status = judge(run, slots[i], now, e)
			if prevRunning || (prevEnd != 0 && run.Start.UnixNano() < prevEnd) {
				res.Status = SlotOverlapping
			}
			prevRunning = run.End.IsZero()
			prevEnd = 0
			if !prevRunning {
				prevEnd = run.End.UnixNano()
			}
			// Further runs in this window answer no slot; StatusOf
			// counts them as runs.
			for r < len(runs) && runs[r].Start.UnixNano() < end {
				r++
			}
			res.Last = r - 1
		case nowN < at[i]+grace:
			res.Status = SlotPending
		default:
			res.Status = SlotMissed
		}
		out[i] = res
	}
	return out
}

func judge(run Run, at, now time.Time, e Expect) SlotStatus {
	switch {
	case run.Failed:
		return SlotFailed
	case run.End.IsZero():
		if e.MaxDuration > 0 && now.Sub(run.Start) > e.MaxDuration {
			return SlotOverran
		}
		return SlotRunning
	case e.MaxDuration > 0 && run.End.Sub(run.Start) > e.MaxDuration:
		return SlotOverran
	case e.MinDuration > 0 && run.End.Sub(run.Start) < e.MinDuration:
		return SlotTooFast
	case run.Start.After(at.Add(e.Grace)):
		return SlotLate
	}
	return SlotOK
}

// Witness applies a second witness: the time the Functions host's timer
// status says the timer last fired. The slot whose window holds it, if no
// run was reported for it, ran but was not reported — not missed. Only the
// latest firing is known, so only one slot can be witnessed.
func Witness(results []SlotResult, lastFired time.Time) {
	if lastFired.IsZero() {
		return
	}
	const maxEarly = 30 * time.Second
	for i := len(results) - 1; i >= 0; i-- {
		r := results[i]
		early := maxEarly
		if i+1 < len(results) {
			early = min(maxEarly, results[i+1].At.Sub(r.At)/10)
		}
		if lastFired.Before(r.At.Add(-early)) {
			continue
		}
		if i+1 < len(results) && !lastFired.Before(results[i+1].At.Add(-min(maxEarly, results[i+1].At.Sub(r.At)/10))) {
			return // it fired after this slot's window: a later slot, not in results
		}
		if r.Run < 0 && (r.Status == SlotMissed || r.Status == SlotPending) {
			results[i].Status = SlotUnreported
		}
		return
	}
}

// Gap is a run of slots that went the same wrong way: consecutive missed
// slots are one gap, as a person reads them ("06:35–08:05: 19 slots
// missed"); any other wrong slot is a gap of its own.
type Gap struct {
	From, To time.Time // the first and last slot
	Status   SlotStatus
	Slots    int
	Each     []time.Time // every slot of the gap, oldest first
}

// wrong reports whether a slot is worth listing.
func wrong(s SlotStatus) bool {
	switch s {
	case SlotMissed, SlotFailed, SlotLate, SlotOverran, SlotOverlapping, SlotTooFast, SlotUnreported:
		return true
	}
	return false
}

// Gaps groups the wrong slots of results (oldest first) into gaps, newest
// first, at most limit of them.
func Gaps(results []SlotResult, limit int) []Gap {
	var out []Gap
	for i := len(results) - 1; i >= 0 && len(out) < limit; i-- {
		r := results[i]
		if !wrong(r.Status) {
			continue
		}
		if n := len(out); n > 0 && r.Status == SlotMissed && out[n-1].Status == SlotMissed && i+1 < len(results) && results[i+1].Status == SlotMissed {
			out[n-1].From = r.At // the range grows back in time
			out[n-1].Slots++
			out[n-1].Each = append([]time.Time{r.At}, out[n-1].Each...)
			continue
		}
		out = append(out, Gap{From: r.At, To: r.At, Status: r.Status, Slots: 1, Each: []time.Time{r.At}})
	}
	return out
}
