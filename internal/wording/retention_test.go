package wording_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/wording"
)

// A partition whose oldest event could not be read in time is named: the
// countdown is of the partitions read, and it may hold older events.
func TestAnUnreadPartitionIsNamedBesideTheCountdown(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	r := hostinsight.Retention{Waiting: 40, Oldest: now.Add(-59 * time.Minute), Partition: "3", Keep: time.Hour, Expires: now.Add(time.Minute), Unread: []string{"1"}}
	got, urgent := wording.Retention(r, now)
	if !strings.Contains(got, "The oldest waiting event read arrived 59 min ago, on partition 3 (partition 1 did not answer in time and may hold older ones)") || !urgent {
		t.Errorf("got %q (urgent %v)", got, urgent)
	}
	r.Unread = nil
	if got, _ := wording.Retention(r, now); strings.Contains(got, "did not answer") || !strings.HasPrefix(got, "The oldest waiting event arrived 59 min ago, on partition 3;") {
		t.Errorf("every partition read: %q", got)
	}
}
