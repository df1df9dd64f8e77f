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
		if got := jobs.StatusOf(tt.job, tt.results, nil, tt.ever, t0); got != tt.want {
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
		if got := jobs.StatusOf(j, results, nil, false, t0); got != jobs.New {
			t.Errorf("%s: a job created now is %s, want %s (slots %v)", sched, got, jobs.New, results)
		}
		later := t0.Add(31 * time.Second)
		if got := j.ExpectedFrom(later.Add(-time.Hour)); !got.After(t0) || got.After(t0.Add(time.Microsecond)) {
			t.Errorf("%s: ExpectedFrom looks back to %v, want just after creation", sched, got)
		}
	}
}

// Thresholds at their exact boundaries: FailAfter-1 failures in a row keep
// the job up, FailAfter make it failing; RecoverAfter-1 good runs keep it
// failing, RecoverAfter make it up; a too-short run is a failure.
func TestConsecutiveThresholds(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(24 * time.Hour)
	slots := func(states ...jobs.SlotStatus) []jobs.SlotResult {
		out := make([]jobs.SlotResult, len(states))
		for i, s := range states {
			out[i] = jobs.SlotResult{At: t0.Add(time.Duration(i) * time.Hour), Status: s, Run: i}
		}
		return out
	}
	ok, failed, tooFast, overran, missed, running := jobs.SlotOK, jobs.SlotFailed, jobs.SlotTooFast, jobs.SlotOverran, jobs.SlotMissed, jobs.SlotRunning
	for _, tc := range []struct {
		name  string
		was   jobs.Status
		slots []jobs.SlotResult
		want  jobs.Status
	}{
		{"two failures in a row: still up", jobs.Up, slots(ok, failed, failed), jobs.Up},
		{"three failures in a row: failing", jobs.Up, slots(ok, failed, failed, failed), jobs.Failing},
		{"three, counting a too-fast and an overrun", jobs.Up, slots(ok, tooFast, overran, failed), jobs.Failing},
		{"failures not in a row", jobs.Up, slots(failed, failed, ok, failed), jobs.Up},
		{"failing, one good run: still failing", jobs.Failing, slots(failed, failed, failed, ok), jobs.Failing},
		{"failing, two good runs: up", jobs.Failing, slots(failed, failed, failed, ok, ok), jobs.Up},
		{"failing, a failure after one good run: failing", jobs.Failing, slots(failed, ok, failed), jobs.Failing},
		{"a miss is missing at once", jobs.Up, slots(ok, missed), jobs.Missing},
		{"a run on its way after failures", jobs.Up, slots(failed, failed, running), jobs.Up},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := jobs.Job{FailAfter: 3, RecoverAfter: 2, Status: tc.was}
			if got := jobs.StatusOf(j, tc.slots, nil, true, now); got != tc.want {
				t.Errorf("StatusOf = %s, want %s", got, tc.want)
			}
		})
	}
	// The default (0) is 1 and 1: today's behaviour.
	if got := jobs.StatusOf(jobs.Job{Status: jobs.Up}, slots(ok, failed), nil, true, now); got != jobs.Failing {
		t.Errorf("default thresholds: %s, want failing on the first failure", got)
	}
	if got := jobs.StatusOf(jobs.Job{Status: jobs.Failing}, slots(failed, ok), nil, true, now); got != jobs.Up {
		t.Errorf("default thresholds: %s, want up on the first good run", got)
	}
	// Scan judges a run shorter than the minimum as too fast.
	res := jobs.Scan([]time.Time{t0}, []jobs.Run{{Start: t0, End: t0.Add(2 * time.Second)}}, now, jobs.Expect{Grace: time.Minute, MinDuration: 30 * time.Second})
	if res[0].Status != jobs.SlotTooFast {
		t.Errorf("a 2 s run with a 30 s minimum is %s, want too fast", res[0].Status)
	}
	j := jobs.Job{FailAfter: 3, RecoverAfter: 2, Grace: 5 * time.Minute, MinDuration: 30 * time.Second, MaxDuration: 30 * time.Minute}
	if got, want := j.Rules(), "alerts after 3 failed runs in a row; recovers after 2 good runs in a row; a run starting more than 5m late is late; a run shorter than 30s is an alert; a run longer than 30m is an alert"; got != want {
		t.Errorf("Rules() = %q, want %q", got, want)
	}
}

// A daily job whose slot ran well is pinged /fail hours later: failing at
// once, as Healthchecks marks a check down on the signal; a good run off
// schedule after that counts toward recovery. A run on its way off
// schedule decides nothing yet.
func TestARunOffScheduleCountsAtOnce(t *testing.T) {
	day := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	slots := []time.Time{day.Add(-24 * time.Hour), day, day.Add(24 * time.Hour)}
	now := day.Add(14 * time.Hour)
	e := jobs.Expect{Grace: time.Hour}
	onTime := []jobs.Run{{Start: slots[0], End: slots[0].Add(time.Minute)}, {Start: day, End: day.Add(time.Minute)}}
	failedAt2pm := append(onTime[:2:2], jobs.Run{Start: now.Add(-time.Minute), End: now.Add(-time.Minute), Failed: true})
	job := jobs.Job{Status: jobs.Up}
	if got := jobs.StatusOf(job, jobs.Scan(slots, failedAt2pm, now, e), failedAt2pm, true, now); got != jobs.Failing {
		t.Errorf("a /fail off schedule left the job %s, want failing", got)
	}
	job.FailAfter = 2
	if got := jobs.StatusOf(job, jobs.Scan(slots, failedAt2pm, now, e), failedAt2pm, true, now); got != jobs.Up {
		t.Errorf("one failure with fail_after 2 made the job %s, want up", got)
	}
	twoFailed := append(failedAt2pm[:3:3], jobs.Run{Start: now, End: now, Failed: true})
	if got := jobs.StatusOf(job, jobs.Scan(slots, twoFailed, now, e), twoFailed, true, now); got != jobs.Failing {
		t.Errorf("two failures in a row off schedule with fail_after 2 made the job %s, want failing", got)
	}
	job = jobs.Job{Status: jobs.Failing}
	recovered := append(failedAt2pm[:3:3], jobs.Run{Start: now.Add(30 * time.Second), End: now.Add(30 * time.Second)})
	if got := jobs.StatusOf(job, jobs.Scan(slots, recovered, now.Add(time.Minute), e), recovered, true, now.Add(time.Minute)); got != jobs.Up {
		t.Errorf("a good run after the failure left the job %s, want up", got)
	}
	started := append(failedAt2pm[:3:3], jobs.Run{Start: now.Add(30 * time.Second)})
	if got := jobs.StatusOf(job, jobs.Scan(slots, started, now.Add(time.Minute), e), started, true, now.Add(time.Minute)); got != jobs.Up {
		t.Errorf("a run on its way after the failure made the job %s, want up (it has not failed)", got)
	}
}

// A daily job made today, whose first slot is tomorrow, takes its first
// runs as Healthchecks does: up on a good one, failing on /fail.
func TestAJobsRunsBeforeItsFirstSlotCount(t *testing.T) {
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	slots := []time.Time{time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)}
	e := jobs.Expect{Grace: time.Hour}
	good := []jobs.Run{{Start: now.Add(-time.Hour), End: now.Add(-time.Hour)}}
	if got := jobs.StatusOf(jobs.Job{Status: jobs.New}, jobs.Scan(slots, good, now, e), good, true, now); got != jobs.Up {
		t.Errorf("a good first run made the job %s, want up", got)
	}
	failed := append(good[:1:1], jobs.Run{Start: now, End: now, Failed: true})
	if got := jobs.StatusOf(jobs.Job{Status: jobs.Up}, jobs.Scan(slots, failed, now, e), failed, true, now); got != jobs.Failing {
		t.Errorf("a /fail before the first slot made the job %s, want failing", got)
	}
	if got := jobs.StatusOf(jobs.Job{Status: jobs.Up}, jobs.Scan(nil, failed, now, e), failed, true, now); got != jobs.Failing {
		t.Errorf("with no slot at all, a /fail made the job %s, want failing", got)
	}
}
