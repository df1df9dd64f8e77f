package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// TestEscalationReachesTheSecondList is escalation on the real
// clock: an operator sets ProcessOrders to escalate to its lead after 3 s
// unacknowledged; failures trip it; the person on call is mailed and
// does nothing; 3 s after the trip (not before) the lead is mailed,
// naming the commonest error and who was told; the lead resumes from
// that mail's link; the episode's record lists both notices, delivered.
func TestEscalationReachesTheSecondList(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartRealClock(t, smtp.Env())
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders/edit"),
		chromedp.WaitVisible(chromedp.CSS("#escalate_to")),
		chromedp.SendKeys(chromedp.CSS("#escalate_to"), "lead@example.com"),
		chromedp.SendKeys(chromedp.CSS("#escalate_after"), "3s"),
		chromedp.Click(chromedp.CSS(`[data-testid="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="escalation"]`)))
	if got := p.text(t, `[data-testid="escalation"]`); !contains(got, "lead@example.com", "after 3s unacknowledged") {
		t.Fatalf("the circuit page says escalation is %q", got)
	}

	postFailures(t, srv.URL, `{"failures": [`+item("ProcessOrders", time.Now().Add(-time.Second), 101, "Timeout talking to inventory after 30 s (order 4711)")+`]}`)
	opened := waitState(t, srv, "ProcessOrders", "open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "ProcessOrders is open") && m.To == "oncall@example.com"
	}, 20*time.Second); !ok {
		t.Fatalf("no trip mail to the person on call; got %v", smtp.Messages())
	}
	up, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "Escalated") }, 20*time.Second)
	if !ok {
		t.Fatalf("no escalation within 20 s; got %v", smtp.Messages())
	}
	if up.To != "lead@example.com" {
		t.Errorf("the escalation went to %s; want the second list, lead@example.com", up.To)
	}
	if due := opened.ChangedAt.Add(3 * time.Second); up.At.Before(due) {
		t.Errorf("the escalation arrived at %s, before the 3 s without acknowledgement were over (%s)", up.At.Format(time.StampMilli), due.Format(time.StampMilli))
	}
	if !contains(up.Text, "oncall@example.com", "nobody has acknowledged it in 3s", "101 × Timeout talking to inventory") {
		t.Errorf("the escalation does not say who was told, for how long, and what failed:\n%s", up.Text)
	}
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, "Escalated") && m.To != "lead@example.com" {
			t.Errorf("the escalation also went to %s", m.To)
		}
	}

	// The lead acts on it from the link, as the first list could.
	lead := newPage(t)
	lead.do(t, chromedp.Navigate(resumeLink(up.Text)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resumed"]`)))
	waitState(t, srv, "ProcessOrders", "closed and switched on", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })

	p.do(t, chromedp.Navigate(fmt.Sprintf("%s/circuits/%s/ProcessOrders/episodes/%d", srv.URL, demo.AppID, opened.Episode)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="episode-notices"]`)))
	if got := p.text(t, `[data-testid="episode-notices"]`); !contains(got, "escalated", "lead@example.com", "delivered") {
		t.Errorf("the episode's notices say %q; want the escalation to lead@example.com, delivered", got)
	}
	if got := p.text(t, `[data-testid="episode-closed"]`); !strings.Contains(got, "lead@example.com") {
		t.Errorf("closed: %q; want resumed by the lead", got)
	}
}
