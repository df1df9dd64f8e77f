package hostinsight_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/hostinsight"
)

// The first waiting event expires its retention after it arrived; the
// oldest of the partitions counts, and a partition with nothing waiting
// or whose oldest was not read does not.
func TestRetentionIsTheOldestWaitingEventsArrivalPlusTheHubsKeep(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	ps := []hostinsight.Position{
		{Checkpoint: hostinsight.Checkpoint{Partition: "0", HasSequence: true}, Counted: true, Waiting: 10, Oldest: at},
		{Checkpoint: hostinsight.Checkpoint{Partition: "1", HasSequence: true}, Counted: true, Waiting: 4, Oldest: at.Add(-time.Hour)},
		{Checkpoint: hostinsight.Checkpoint{Partition: "2", HasSequence: true}, Counted: true, Waiting: 0, Oldest: at.Add(-5 * time.Hour)},
		{Checkpoint: hostinsight.Checkpoint{Partition: "3", HasSequence: true}, Counted: true, Waiting: 7},
	}
	r := hostinsight.RetentionOf(ps, 24*time.Hour)
	if r.Waiting != 21 || r.Partition != "1" || !r.Oldest.Equal(at.Add(-time.Hour)) || !r.Expires.Equal(at.Add(23*time.Hour)) || r.Lost != 0 {
		t.Errorf("retention = %+v; want 21 waiting, the oldest on partition 1 an hour before %s, expiring 23 h after it", r, at)
	}
	if r := hostinsight.RetentionOf(ps, 0); !r.Expires.IsZero() || r.Partition != "1" {
		t.Errorf("with the hub's retention unknown: %+v; want no expiry, the oldest still named", r)
	}
	ps[3].Expired = 12
	if r := hostinsight.RetentionOf(ps, 24*time.Hour); r.Lost != 12 {
		t.Errorf("lost = %d, want 12", r.Lost)
	}
}

// The reminder due is the nearest step not longer than the time left; a
// watcher that looks late owes only that one; none once expiry passed or
// events were lost, or with nothing known.
func TestTheRetentionStepDueIsTheNearest(t *testing.T) {
	exp := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	steps := hostinsight.ReminderSteps
	for _, tc := range []struct {
		name string
		left time.Duration
		lost int64
		want time.Duration
	}{
		{"two days left", 48 * time.Hour, 0, 0},
		{"a day and a minute", 24*time.Hour + time.Minute, 0, 0},
		{"exactly a day", 24 * time.Hour, 0, 24 * time.Hour},
		{"seven hours", 7 * time.Hour, 0, 24 * time.Hour},
		{"six hours", 6 * time.Hour, 0, 6 * time.Hour},
		{"a watcher late to 50 minutes", 50 * time.Minute, 0, time.Hour},
		{"one second", time.Second, 0, time.Hour},
		{"expired", 0, 0, 0},
		{"lost already", 3 * time.Hour, 5, 0},
	} {
		r := hostinsight.Retention{Expires: exp, Lost: tc.lost}
		got, ok := r.Step(exp.Add(-tc.left), steps)
		if got != tc.want || ok != (tc.want > 0) {
			t.Errorf("%s: step %v %v, want %v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := (hostinsight.Retention{}).Step(exp, steps); ok {
		t.Error("a step is due with no expiry known")
	}
}
