package jobs_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

// A daily job sent 30 runs in one slot's window keeps 10; the first past
// the bound is told at once, the rest at most every 10 s; the next slot
// starts again; runs timed back and forth between two slots do not start
// either again.
func TestAJobKeepsTenRunsPerSlot(t *testing.T) {
	j := jobs.Job{ID: "daily", Schedule: "0 0 2 * * *", TimeZone: "UTC"}
	day := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	var b jobs.SlotBound
	now := day.Add(12 * time.Hour)
	kept, told := 0, 0
	for i := range 30 {
		ok, tell := b.Allow(j, now.Add(time.Duration(i)*time.Second), now)
		if ok {
			kept++
		}
		told += tell
	}
	if kept != jobs.MaxRunsPerSlot || told != 1 {
		t.Errorf("30 runs in one window: %d kept, %d told at once; want %d and 1", kept, told, jobs.MaxRunsPerSlot)
	}
	if _, tell := b.Allow(j, now.Add(time.Minute), now.Add(11*time.Second)); tell != 20 {
		t.Errorf("10 s later, %d told; want the 19 held and this one", tell)
	}
	if ok, _ := b.Allow(j, day.Add(24*time.Hour), now); !ok {
		t.Error("the next slot's first run was refused")
	}
	for i := range 40 {
		at := day.Add(time.Hour) // today's window, full
		if i%2 == 1 {
			at = day.Add(25 * time.Hour) // tomorrow's, one run in
		}
		b.Allow(j, at, now)
	}
	if ok, _ := b.Allow(j, day.Add(26*time.Hour), now); ok {
		t.Error("alternating between two windows started a full one again")
	}
	// A monthly job's window is a month: 15 runs on one day keep 10.
	fresh := jobs.Job{ID: "monthly", Schedule: "0 0 2 1 * *", TimeZone: "UTC"}
	kept = 0
	for i := range 15 {
		if ok, _ := b.Allow(fresh, time.Date(2026, 11, 20, 0, 0, i, 0, time.UTC), now); ok {
			kept++
		}
	}
	if kept != jobs.MaxRunsPerSlot {
		t.Errorf("a monthly job's runs: %d kept, want %d", kept, jobs.MaxRunsPerSlot)
	}
}
