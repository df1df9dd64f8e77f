package jobs

import (
	"sync"
	"time"
)

// SlotBound keeps a job's runs to MaxRunsPerSlot per expected slot on
// this instance: a key holder who sends thousands of pings or invocations
// named after a daily job stores ten, not thousands, and the rest are
// counted (Extra), shown on the job's page, never stored. What it
// remembers is this instance's, per job: at most maxBoundJobs jobs, each
// named by a verified ping key or an app's key.
type SlotBound struct {
	mu   sync.Mutex
	jobs map[string]*slotCount
}

type slotCount struct {
	schedule   string
	slot, next time.Time         // the window the latest run fell in: [slot, next)
	n          map[time.Time]int // runs allowed per slot, at most maxSlotsCounted slots
	extra      int               // runs past the bound not yet told to the store
	toldAt     time.Time         // when extra runs were last told
}

const (
	maxBoundJobs    = 10_000
	maxSlotsCounted = 64 // an invocation's time is within its app's horizon: an hour or its longest window
)

// tellEvery is how often a job's extra runs are written to its row at
// most: one write per job per period, whatever the flood.
const tellEvery = 10 * time.Second

// Allow says whether a run of j at may be stored. When it may not, tell
// is the count of extra runs to add to the job's row now (0: later).
func (b *SlotBound) Allow(j Job, at, now time.Time) (ok bool, tell int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.jobs == nil || len(b.jobs) >= maxBoundJobs {
		b.jobs = map[string]*slotCount{}
	}
	c := b.jobs[j.ID]
	if c == nil || c.schedule != j.Schedule+" "+j.TimeZone {
		c = &slotCount{schedule: j.Schedule + " " + j.TimeZone, n: map[time.Time]int{}}
		b.jobs[j.ID] = c
	}
	if c.next.IsZero() || at.Before(c.slot) || !at.Before(c.next) {
		slot, next, found := slotOf(j, at)
		if !found {
			slot, next = time.Time{}, at.Add(time.Minute) // before the first slot: one window
		}
		c.slot, c.next = slot, next
	}
	if c.n[c.slot] < MaxRunsPerSlot {
		if _, ok := c.n[c.slot]; !ok && len(c.n) >= maxSlotsCounted {
			oldest := c.slot
			for s := range c.n {
				if s.Before(oldest) {
					oldest = s
				}
			}
			delete(c.n, oldest)
		}
		c.n[c.slot]++
		return true, 0
	}
	c.extra++
	if now.Sub(c.toldAt) < tellEvery {
		return false, 0
	}
	tell, c.extra, c.toldAt = c.extra, 0, now
	return false, tell
}

// slotOf is the slot whose window holds at (the latest slot at or before
// at, give or take Scan's 30 s of skew) and the next one; found is false
// for a schedule that does not read or has no slot within 32 days before.
// It walks the schedule field by field (Prev, Next): a frequent schedule
// costs what a monthly one does.
func slotOf(j Job, at time.Time) (slot, next time.Time, found bool) {
	sched, err := j.ParseSchedule()
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	edge := at.Add(30 * time.Second)
	slot, ok := sched.Prev(edge.Add(-time.Nanosecond))
	if ok && !slot.Before(edge.Add(-32*24*time.Hour)) {
		if n, ok := sched.Next(slot.Add(time.Nanosecond)); ok && n.Before(slot.Add(32*24*time.Hour)) {
			return slot, n.Add(-30 * time.Second), true
		}
		return slot, slot.Add(32 * 24 * time.Hour), true
	}
	// No slot before: runs before the first slot share one window.
	return time.Time{}, time.Time{}, false
}
