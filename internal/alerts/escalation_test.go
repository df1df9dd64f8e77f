package alerts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// An open episode is escalated once, to the second list only, from the
// moment it has gone unacknowledged for Escalate.After; an acknowledged,
// closed, shadow or by-hand episode never is.
func TestEscalationsGoToTheSecondListOnceDue(t *testing.T) {
	trip := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	p := alerts.Policy{RemindEvery: 4 * time.Hour, MaxReminders: 3, Within: 24 * time.Hour}
	open := circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Recipients: []string{"oncall@example.com"}, Escalate: circuit.Escalation{After: 30 * time.Minute, To: []string{"lead@example.com", "ops-pager", "Lead@example.com"}}}, State: circuit.Open, Episode: 4, ChangedAt: trip}
	with := func(f func(*circuit.Circuit)) circuit.Circuit { c := open; f(&c); return c }
	for _, tc := range []struct {
		name string
		c    circuit.Circuit
		at   time.Duration // after the trip
		want []string
	}{
		{"a second before it is due", open, 30*time.Minute - time.Second, nil},
		{"due: the second list, each once", open, 30 * time.Minute, []string{"lead@example.com", "channel:ops-pager"}},
		{"still owed later (the outbox keeps it once)", open, 5 * time.Hour, []string{"lead@example.com", "channel:ops-pager"}},
		{"not out of the blue a day later", open, 30*time.Minute + 24*time.Hour + time.Second, nil},
		{"acknowledged", with(func(c *circuit.Circuit) { c.AckedEpisode = 4 }), time.Hour, nil},
		{"an earlier episode's acknowledgement", with(func(c *circuit.Circuit) { c.AckedEpisode = 3 }), time.Hour, []string{"lead@example.com", "channel:ops-pager"}},
		{"closed again", with(func(c *circuit.Circuit) { c.State = circuit.Closed }), time.Hour, nil},
		{"on trial", with(func(c *circuit.Circuit) { c.State = circuit.HalfOpen }), time.Hour, nil},
		{"switched off by hand", with(func(c *circuit.Circuit) { c.State = circuit.ForcedOpen }), time.Hour, nil},
		{"shadow mode", with(func(c *circuit.Circuit) { c.Shadow = true }), time.Hour, nil},
		{"no escalation set", with(func(c *circuit.Circuit) { c.Escalate = circuit.Escalation{} }), time.Hour, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, m := range alerts.Escalations(tc.c, trip.Add(tc.at), p) {
				if m.Kind != alerts.KindEscalated || m.Episode != 4 {
					t.Errorf("message %+v; want an escalation of episode 4", m)
				}
				got = append(got, m.To)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("escalated to %q; want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("escalated to %q; want %q", got, tc.want)
				}
			}
		})
	}
}

// A circuit that sets no escalation takes its app's; one that sets its
// own keeps it.
func TestTheAppsEscalationIsTheDefault(t *testing.T) {
	r := newRig(t)
	app, err := r.store.Apps.Get(t.Context(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	app.Escalate = circuit.Escalation{After: time.Hour, To: []string{"head-of-ops@example.com"}}
	if err := r.store.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	smtp := mailtest.Start(t)
	pass := passer(t, r.channelSender(smtp.Port, ""))
	pass()
	r.clock.Advance(time.Hour)
	pass()
	m, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "Escalated") }, 10*time.Second)
	if !ok || m.To != "head-of-ops@example.com" || !strings.Contains(m.Text, "nobody has acknowledged it in 1h") {
		t.Fatalf("no escalation to the app's list after an hour: %+v", smtp.Messages())
	}

	c, _ := r.store.Circuits.Get(t.Context(), "orders", "Process")
	own := circuit.Escalation{After: time.Minute, To: []string{"lead@example.com"}}
	c.Escalate = own
	if got := c.EscalationOf(app); got.After != own.After || got.To[0] != "lead@example.com" {
		t.Errorf("a circuit's own escalation gave way to the app's: %+v", got)
	}
}
