package alerts_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/storage"
)

// A switched-off episode owes its people the reminder of the step due,
// once; at the last step and once events are lost, its escalation list
// too, unless someone acknowledged it or an operator tripped it by hand.
func TestRetentionOwesTheStepDueAndTheLoss(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	open := circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Escalate: circuit.Escalation{To: []string{"lead@example.com"}, After: 48 * time.Hour}}, State: circuit.Open, Episode: 3, ChangedAt: now.Add(-20 * time.Hour), Actuation: circuit.Actuation{AppliedEpisode: 3}}
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

// stalledHubs reads the waiting events of app "slow" only once released;
// every other app's at once, expiring within the hour.
type stalledHubs struct {
	release chan struct{}
	now     time.Time
}

func (h stalledHubs) OffRetention(ctx context.Context, app circuit.App, _ circuit.Circuit, _, _ time.Time) (hostinsight.Retention, []hostinsight.Position, bool) {
	if app.ID == "slow" {
		select {
		case <-h.release:
		case <-ctx.Done():
			return hostinsight.Retention{}, nil, false
		}
	}
	return hostinsight.Retention{Waiting: 5, Expires: h.now.Add(30 * time.Minute)}, nil, true
}

// toldOutbox tells of each message it stored.
type toldOutbox struct {
	alerts.Outbox
	ensured chan alerts.Message
}

func (o *toldOutbox) Ensure(ctx context.Context, m alerts.Message) error {
	err := o.Outbox.Ensure(ctx, m)
	if err == nil {
		o.ensured <- m
	}
	return err
}

// A hub that does not answer holds up only its own app's reminders: the
// other app's is in the outbox while the first is still waiting.
func TestASlowHubHoldsUpOnlyItsOwnApp(t *testing.T) {
	r := newRig(t)
	for _, id := range []string{"slow", "fast"} {
		if err := r.store.Apps.Put(t.Context(), circuit.App{ID: id, Switch: circuit.SwitchLocal, LocalSettings: "/dev/null", EventHubs: "orders-ns.servicebus.windows.net"}); err != nil {
			t.Fatal(err)
		}
		if err := r.store.Circuits.Put(t.Context(), circuit.Circuit{AppID: id, Function: "Import", Settings: circuit.Settings{Threshold: 10, Window: time.Minute, EventHub: "orders", Recipients: []string{"ops@example.com"}}, State: circuit.Open, Episode: 1, ChangedAt: t0, Actuation: circuit.Actuation{AppliedEpisode: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	hubs := stalledHubs{release: make(chan struct{}), now: t0}
	outbox := &toldOutbox{Outbox: r.store.Outbox, ensured: make(chan alerts.Message, 10)}
	w := &alerts.RetentionWatch{Circuits: storage.Lists{Store: r.store}, Reader: hubs, Outbox: outbox, Clock: r.clock}
	done := make(chan error, 1)
	go func() { done <- w.Pass(t.Context(), fence) }()
	select {
	case m := <-outbox.ensured:
		if m.Circuit != "fast/Import" || m.Kind != "expiring-1h" {
			t.Fatalf("the first reminder written while one hub stalled is %s %s; want fast/Import's", m.Circuit, m.Kind)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other app's reminder did not come while one hub stalled")
	}
	close(hubs.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
