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
