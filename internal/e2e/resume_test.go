package e2e_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
)

// TestResumeFromTheMailedLink follows the whole path: the open demo circuit
// is mailed to its recipient through a real SMTP server; the test takes the
// link from the received mail, opens it in Chromium, clicks Resume, and
// checks that the trigger is back on and the flip log names the recipient.
func TestResumeFromTheMailedLink(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.Start(t, smtp.Env())
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, settings, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(2 * time.Second) // the sender's next pass
	stop := srv.RunFakeClock()
	mails := smtp.Wait(2, 20*time.Second)
	stop()
	var mail mailtest.Message
	for _, m := range mails {
		if strings.Contains(m.Subject, "SyncInventory") {
			mail = m
		}
	}
	if mail.To != "oncall@example.com" {
		t.Fatalf("no mail about SyncInventory reached oncall@example.com; got %v", smtp.Messages())
	}
	link := regexp.MustCompile(`https?://\S+/resume/\S+`).FindString(mail.Text)
	if link == "" {
		t.Fatalf("no resume link in:\n%s", mail.Text)
	}

	p := newPage(t)
	p.do(t, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume"]`)))
	if got := p.text(t, `[data-testid="state"]`); got != "open" {
		t.Errorf("the link's page says the circuit is %q", got)
	}
	// Opening the link changed nothing: mail scanners do that all day.
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory"); c.State != circuit.Open {
		t.Fatalf("opening the link changed the circuit to %s", c.State)
	}
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resumed"]`)))

	c := settle(t, srv, "SyncInventory")
	if c.State != circuit.Closed {
		t.Fatalf("after the click the circuit is %s", c.State)
	}
	if off, _ := localsettings.Disabled(settings, "SyncInventory"); off {
		t.Error("the trigger is still off")
	}
	flips, err := srv.App.Store.Circuits.Flips(t.Context(), demo.AppID, "SyncInventory", 1)
	if err != nil || len(flips) != 1 || flips[0].Reason != "resumed via e-mail link by oncall@example.com" || flips[0].Actor != "resume link: oncall@example.com" {
		t.Errorf("flip log = %+v (err %v)", flips, err)
	}

	// The link is single use: its episode has ended.
	p.do(t, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("h1")))
	if h := p.text(t, "main"); !strings.Contains(h, "episode of the circuit that has ended") {
		t.Errorf("a used link shows: %s", h)
	}
	if errs := p.errors(); len(errs) > 0 && !onlyStatusErrors(errs) {
		t.Errorf("pages logged errors: %v", errs)
	}
}

// onlyStatusErrors accepts the console line Chromium logs for a page served
// with a 4xx status, which the used link is meant to get.
func onlyStatusErrors(errs []string) bool {
	for _, e := range errs {
		if !strings.Contains(e, "status of 410") {
			return false
		}
	}
	return true
}
