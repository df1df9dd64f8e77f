package wording_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
)

// Every alert about a circuit with a runbook names it: the mail's text and
// HTML, and the notice chat channels and webhooks get, whatever the kind.
func TestEveryAlertNamesTheRunbook(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	comp := composer(t, now)
	app := circuit.App{ID: "orders", DisplayName: "Orders"}
	const link, note = "https://wiki.example.com/runbooks/orders?step=1&x=<y>", "Check the inventory database first"
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second,
		Runbook: circuit.Runbook{URL: link, Note: note}}, State: circuit.Open, Episode: 4, ChangedAt: now, Reason: "why", Incarnation: "abc"}
	for _, kind := range []string{alerts.KindOpened, alerts.KindResumed, alerts.KindEscalated, alerts.KindHeld} {
		m := alerts.Message{ID: alerts.MessageID(c.ID(), 4, kind, "ops@example.com"), Circuit: c.ID(), Episode: 4, Kind: kind, To: "ops@example.com"}
		mail, err := comp.Compose(m, c, app)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(mail.Text, "Runbook:   "+link+" "+note) {
			t.Errorf("%s: the mail's text does not name the runbook:\n%s", kind, mail.Text)
		}
		if !strings.Contains(mail.HTML, `href="https://wiki.example.com/runbooks/orders?step=1&amp;x=&lt;y&gt;"`) || !strings.Contains(mail.HTML, note) {
			t.Errorf("%s: the mail's HTML does not link the runbook:\n%s", kind, mail.HTML)
		}
		n, err := comp.Notice(m, c, app)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range n.Facts {
			found = found || f.Name == "Runbook" && f.Value == link+" "+note
		}
		if !found || n.Data["runbook_url"] != link {
			t.Errorf("%s: the notice does not name the runbook: %+v %v", kind, n.Facts, n.Data)
		}
	}
	c.Runbook = circuit.Runbook{}
	m := alerts.Message{ID: "x", Circuit: c.ID(), Episode: 4, Kind: alerts.KindOpened, To: "ops@example.com"}
	if mail, _ := comp.Compose(m, c, app); strings.Contains(mail.Text, "Runbook") {
		t.Errorf("a circuit without a runbook is mailed with one:\n%s", mail.Text)
	}
}
