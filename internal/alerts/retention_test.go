package alerts_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
)

// A switched-off episode owes its people the reminder of the step due,
// once; at the last step and once events are lost, its escalation list
// too, unless someone acknowledged it or an operator tripped it by hand.
func TestRetentionOwesTheStepDueAndTheLoss(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	open := circuit.Circuit{AppID: "orders", Function: "Import", State: circuit.Open, Episode: 3, AppliedEpisode: 3, ChangedAt: now.Add(-20 * time.Hour),
		Escalate: circuit.Escalation{To: []string{"lead@example.com"}, After: 48 * time.Hour}}
	dests := []string{"oncall@example.com"}
	in := func(d time.Duration) hostinsight.Retention {
		return hostinsight.Retention{Waiting: 9, Expires: now.Add(d)}
	}
	acked, byHand, shadow, closed, pending := open, open, open, open, open
	acked.AckedEpisode = 3
	byHand.State = circuit.ForcedOpen
	shadow.Shadow = true
	closed.State = circuit.Closed
	pending.AppliedEpisode = 2
	for _, tc := range []struct {
		name string
		c    circuit.Circuit
		r    hostinsight.Retention
		want []string
	}{
		{"20 hours left", open, in(20 * time.Hour), []string{"expiring-24h to oncall@example.com"}},
		{"5 hours left", open, in(5 * time.Hour), []string{"expiring-6h to oncall@example.com"}},
		{"the last hour", open, in(30 * time.Minute), []string{"expiring-1h to oncall@example.com", "expiring-escalated to lead@example.com"}},
		{"the last hour, acknowledged", acked, in(30 * time.Minute), []string{"expiring-1h to oncall@example.com"}},
		{"the last hour, by hand", byHand, in(30 * time.Minute), []string{"expiring-1h to oncall@example.com"}},
		{"lost", open, hostinsight.Retention{Waiting: 9, Expires: now.Add(-time.Minute), Lost: 40}, []string{"events-lost to oncall@example.com", "events-lost to lead@example.com"}},
		{"lost, acknowledged", acked, hostinsight.Retention{Waiting: 9, Lost: 40}, []string{"events-lost to oncall@example.com"}},
		{"two days left", open, in(48 * time.Hour), nil},
		{"retention unknown", open, hostinsight.Retention{Waiting: 9}, nil},
		{"shadow", shadow, in(30 * time.Minute), nil},
		{"closed", closed, in(30 * time.Minute), nil},
		{"the switch not applied yet", pending, in(30 * time.Minute), nil},
	} {
		var got []string
		for _, m := range alerts.RetentionOwed(tc.c, tc.r, hostinsight.ReminderSteps, dests, now) {
			if m.Episode != 3 || m.Circuit != "orders/Import" {
				t.Errorf("%s: message %+v is not about episode 3 of orders/Import", tc.name, m)
			}
			got = append(got, m.Kind+" to "+m.To)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: owed %s; want %s", tc.name, strings.Join(got, ", "), strings.Join(tc.want, ", "))
		}
	}
	if d, ok := alerts.ExpiringStep(alerts.ExpiringKind(6 * time.Hour)); !ok || d != 6*time.Hour {
		t.Errorf("the 6h step's kind reads back as %v %v", d, ok)
	}
}
