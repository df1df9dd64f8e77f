package jobs_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

func TestStatusOf(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	r := func(at time.Duration, s jobs.SlotStatus) jobs.SlotResult {
		return jobs.SlotResult{At: t0.Add(at), Status: s}
	}
	tests := []struct {
		name    string
		job     jobs.Job
		results []jobs.SlotResult
		ever    bool
		want    jobs.Status
	}{
		{"paused wins", jobs.Job{Paused: true}, []jobs.SlotResult{r(0, jobs.SlotMissed)}, true, jobs.Paused},
		{"never ran, nothing due", jobs.Job{}, nil, false, jobs.New},
		{"last slot missed", jobs.Job{}, []jobs.SlotResult{r(0, jobs.SlotOK), r(time.Hour, jobs.SlotMissed)}, true, jobs.Missing},
		{"last slot failed", jobs.Job{}, []jobs.SlotResult{r(0, jobs.SlotFailed)}, true, jobs.Failing},
		{"overran counts as failing", jobs.Job{}, []jobs.SlotResult{r(0, jobs.SlotOverran)}, true, jobs.Failing},
		{"due within grace is late", jobs.Job{}, []jobs.SlotResult{r(-time.Hour, jobs.SlotOK), r(0, jobs.SlotPending)}, true, jobs.Late},
		{"due within grace after a missed slot is still missing", jobs.Job{}, []jobs.SlotResult{r(-time.Hour, jobs.SlotMissed), r(0, jobs.SlotPending)}, true, jobs.Missing},
		{"a future slot looks past itself", jobs.Job{}, []jobs.SlotResult{r(-time.Hour, jobs.SlotOK), r(time.Hour, jobs.SlotPending)}, true, jobs.Up},
		{"late but done is up", jobs.Job{}, []jobs.SlotResult{r(0, jobs.SlotLate)}, true, jobs.Up},
	}
	for _, tt := range tests {
		if got := jobs.StatusOf(tt.job, tt.results, tt.ever, t0); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	if got := jobs.SuccessRate([]jobs.SlotResult{r(0, jobs.SlotOK), r(1, jobs.SlotMissed), r(2, jobs.SlotLate), r(3, jobs.SlotFailed), r(4, jobs.SlotPending)}); got != 0.5 {
		t.Errorf("SuccessRate = %v, want 0.5", got)
	}
}

// A job registered at the very instant of one of its slots (an "every"
// schedule is anchored there) is new, not already late for that slot.
func TestNoSlotIsExpectedAtTheInstantAJobIsCreated(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, sched := range []string{"every 30s", "0 9 * * *"} {
		j := jobs.Job{Schedule: sched, TimeZone: "UTC", CreatedAt: t0, Grace: time.Minute}
		s, err := j.ParseSchedule()
		if err != nil {
			t.Fatal(err)
		}
		results := jobs.Scan(s.Slots(j.ExpectedFrom(t0.Add(-time.Hour)), t0.Add(time.Second)), nil, t0, jobs.Expect{Grace: j.Grace})
		if got := jobs.StatusOf(j, results, false, t0); got != jobs.New {
			t.Errorf("%s: a job created now is %s, want %s (slots %v)", sched, got, jobs.New, results)
		}
		later := t0.Add(31 * time.Second)
		if got := j.ExpectedFrom(later.Add(-time.Hour)); !got.After(t0) || got.After(t0.Add(time.Microsecond)) {
			t.Errorf("%s: ExpectedFrom looks back to %v, want just after creation", sched, got)
		}
	}
}
