package e2e_test

import (
	"fmt"
	"net/http"
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
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestRealClockJourney walks the README's path as
// a person lives it, on the real clock with nothing advanced by hand:
// failures past ProcessOrders' threshold (more than 100 in 30 s) open it,
// the mail arrives, its link resumes it from a browser that is not signed
// in, the circuit stays closed although the failures that opened it are
// still in its window, and new failures past the threshold open it again
// with a new episode and a new mail.
func TestRealClockJourney(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartRealClock(t, smtp.Env())
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	report := func() { t.Helper(); reportOverThreshold(t, srv.URL) }
	get := func() circuit.Circuit {
		t.Helper()
		c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Its runbook is what the person paged reads first: the mail names it.
	const runbook = "https://wiki.example.com/runbooks/orders"
	withRunbook := get()
	withRunbook.Runbook = circuit.Runbook{URL: runbook, Note: "Check the inventory database first"}
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), withRunbook); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func(circuit.Circuit) bool) circuit.Circuit {
		t.Helper()
		return waitState(t, srv, "ProcessOrders", what, ok)
	}
	mailAbout := func(episode int64) mailtest.Message {
		t.Helper()
		m, ok := smtp.WaitFor(func(m mailtest.Message) bool {
			return strings.Contains(m.Subject, "ProcessOrders is open") && m.To == "oncall@example.com" &&
				resumeLink(m.Text) != "" && linkEpisode(t, srv, resumeLink(m.Text)) == episode
		}, 20*time.Second)
		if !ok {
			t.Fatalf("no mail about episode %d of ProcessOrders within 20 s; got %v", episode, smtp.Messages())
		}
		return m
	}

	start := time.Now()
	report()
	opened := waitFor("open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	t.Logf("open and switched off %s after the report", time.Since(start).Round(time.Millisecond))
	if off, _ := localsettings.Disabled(settings, "ProcessOrders"); !off {
		t.Fatal("the trigger is on while the circuit is open")
	}
	mail := mailAbout(opened.Episode)
	t.Logf("mail received %s after the report", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(mail.Text, "Runbook:   "+runbook+" Check the inventory database first") {
		t.Errorf("the trip mail does not name the circuit's runbook:\n%s", mail.Text)
	}

	// The recipient follows the link, signed out, and presses Resume.
	p := newPage(t)
	p.do(t, chromedp.Navigate(resumeLink(mail.Text)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume"]`)))
	if got := p.text(t, `[data-testid="state"]`); got != "open" {
		t.Fatalf("the link's page says %q", got)
	}
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resumed"]`)))
	resumed := waitFor("closed and switched on", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })
	if resumed.Episode != opened.Episode+1 {
		t.Fatalf("resumed as episode %d, want %d", resumed.Episode, opened.Episode+1)
	}

	// The 101 failures are still inside the 30 s window; for 10 s the
	// circuit must stay closed and the trigger on.
	testenv.Consistently(t, 10*time.Second, func() (bool, string) {
		if c := get(); c.State != circuit.Closed || c.Episode != resumed.Episode {
			return false, fmt.Sprintf("after the resume the circuit is %s, episode %d: %q", c.State, c.Episode, c.Reason)
		}
		off, _ := localsettings.Disabled(settings, "ProcessOrders")
		return !off, "the trigger went off again after the resume"
	})
	p.do(t, chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)))
	p.do(t,
		chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "olivia"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), apptest.Password),
		chromedp.Submit(chromedp.CSS(`input[name="password"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="signed-in-as"]`)),
		chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="count-span"]`)),
	)
	if state, span := p.text(t, `[data-testid="state"]`), p.text(t, `[data-testid="count-span"]`); state != "closed" || !strings.Contains(span, "since the last change") {
		t.Errorf("the circuit page shows %q, counting %q; want closed, counting since the resume", state, span)
	}

	// New failures past the threshold open it again, with a new mail.
	report()
	again := waitFor("open again", func(c circuit.Circuit) bool {
		return c.State == circuit.Open && c.Episode == resumed.Episode+1 && !c.Pending()
	})
	if !strings.Contains(again.Reason, "101 failures since") {
		t.Errorf("the new trip says %q; want it to count since the resume", again.Reason)
	}
	mailAbout(again.Episode)
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}

// reportOverThreshold reports 101 failures of the demo's ProcessOrders,
// one more than its threshold, with the demo app's key.
func reportOverThreshold(t *testing.T, base string) {
	t.Helper()
	postFailures(t, base, `{"failures": [{"function": "ProcessOrders", "count": 101, "error": "Timeout talking to inventory"}]}`)
}

// postFailures posts a failure report with the demo app's key.
func postFailures(t *testing.T, base, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/failures", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("failure report: %d", resp.StatusCode)
	}
}

var linkPattern = regexp.MustCompile(`https?://\S+/resume/\S+`)

func resumeLink(text string) string { return linkPattern.FindString(text) }

// linkEpisode reads the episode a link names, by checking it with the
// server's own signer.
func linkEpisode(t *testing.T, srv *apptest.Server, link string) int64 {
	t.Helper()
	token := link[strings.LastIndex(link, "/resume/")+len("/resume/"):]
	l, err := srv.App.Links.Verify(token, time.Now())
	if err != nil {
		return -1
	}
	return l.Episode
}
