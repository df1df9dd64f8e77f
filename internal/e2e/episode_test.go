package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// TestTheEpisodeRecordEndToEnd is the 3 a.m. page's journey on the real
// clock: failures with three kinds of error, one over OTLP and two over
// HTTP, trip ProcessOrders; the mail names the commonest error with its
// count; the person on call acknowledges from the mailed link, later
// resumes from it; the circuit page's flip log leads to the episode's
// record, which lists the errors, the delivered mail, the acknowledgement
// and the resume, and copies as Markdown; the API serves the same record.
func TestTheEpisodeRecordEndToEnd(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	viewToken, viewHash := auth.NewAPIToken()
	env := smtp.Env()
	env["FUSEBOX_API_TOKENS"] = "postmortems:viewer:" + viewHash
	srv := apptest.StartRealClock(t, env)
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Five deadlocks from the host's own export, counted before the rest.
	host := shapedHost(t, srv, demo.Shape{})
	at := time.Now().Add(-4 * time.Second)
	for range 5 {
		host.Failures("ProcessOrders", 1, at, "Deadlock on table Orders (victim 57)")
	}
	if err := host.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitCounted(t, srv, "ProcessOrders", 5, 0)

	// 90 timeouts (two texts that differ only in numbers: one group) and 8
	// refused connections over HTTP: 103 in the 30 s window, over 100.
	items := []string{
		item("ProcessOrders", time.Now().Add(-3*time.Second), 60, "Timeout talking to inventory after 30 s (order 4711)"),
		item("ProcessOrders", time.Now().Add(-2*time.Second), 30, "Timeout talking to inventory after 12 s (order 99)"),
		item("ProcessOrders", time.Now().Add(-1*time.Second), 8, "Connection refused by 10.0.0.4:5432"),
	}
	postFailures(t, srv.URL, `{"failures": [`+strings.Join(items, ",")+`]}`)
	opened := waitState(t, srv, "ProcessOrders", "open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })

	mail, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "ProcessOrders is open") && m.To == "oncall@example.com"
	}, 20*time.Second)
	if !ok {
		t.Fatalf("no trip mail within 20 s; got %v", smtp.Messages())
	}
	if !strings.Contains(mail.Text, "90 × Timeout talking to inventory after") {
		t.Errorf("the trip mail does not name the commonest error with its count:\n%s", mail.Text)
	}

	// The person on call acknowledges from the link, then resumes from it.
	p := newPage(t)
	link := resumeLink(mail.Text)
	p.do(t, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`[data-testid="acknowledge"]`)))
	if first := p.text(t, `[data-testid="error-group"]`); !strings.Contains(first, "Timeout talking to inventory after") || !strings.Contains(first, "90") {
		t.Errorf("the resume page's first error group is %q; want the 90 timeouts", first)
	}
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="acknowledge"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="acked"]`)))
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resumed"]`)))
	waitState(t, srv, "ProcessOrders", "closed and switched on", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })

	// The flip log leads to the episode's record.
	p.signIn(t, srv.URL, "olivia")
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="episode-link"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="episode-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="episode-timeline"]`)))
	if want := fmt.Sprintf("/circuits/%s/ProcessOrders/episodes/%d", demo.AppID, opened.Episode); !strings.HasSuffix(p.location(t), want) {
		t.Fatalf("the flip log's episode link led to %s; want %s", p.location(t), want)
	}
	groups, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="error-group"]')].map(r => r.innerText.replace(/\s+/g, " "))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 || !contains(groups[0], "Timeout talking to inventory", "90") || !contains(groups[1], "Connection refused", "8") ||
		!contains(groups[2], "Deadlock on table Orders", "5") {
		t.Errorf("the episode's errors are %q; want timeouts (90), refused connections (8), deadlocks (5)", groups)
	}
	if got := p.text(t, `[data-testid="episode-acked"]`); !strings.Contains(got, "oncall@example.com") {
		t.Errorf("acknowledged: %q; want the recipient who acknowledged from the link", got)
	}
	if got := p.text(t, `[data-testid="episode-closed"]`); !strings.Contains(got, "oncall@example.com") || !strings.Contains(got, "after the trip") {
		t.Errorf("closed: %q; want resumed by the recipient, and how long after the trip", got)
	}
	if got := p.text(t, `[data-testid="episode-notices"]`); !contains(got, "opened", "oncall@example.com", "delivered") {
		t.Errorf("the notices say %q; want the trip mail to oncall@example.com, delivered", got)
	}
	if got := p.text(t, `[data-testid="episode-catchup"]`); !strings.Contains(got, "host storage") {
		t.Errorf("the catch-up of the latest episode says %q; want why it cannot show the checkpoints (the app has no host storage here)", got)
	}
	markdown := p.text(t, `[data-testid="episode-markdown"]`)
	if !contains(markdown, fmt.Sprintf("# %s/ProcessOrders, episode %d", demo.AppID, opened.Episode), "| 90 | Timeout talking to inventory", "**Acknowledged**", "**Closed**") {
		t.Errorf("the Markdown for the postmortem:\n%s", markdown)
	}
	// The button copies it. The clipboard itself needs a permission the
	// headless browser does not grant, so writeText is watched instead.
	p.do(t, chromedp.Evaluate[chromedp.Void](`navigator.clipboard.writeText = (text) => { window.copiedForTest = text; return Promise.resolve(); }`),
		chromedp.Click(chromedp.CSS(`[data-testid="copy-markdown"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-copied-note]`)))
	copied, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`window.copiedForTest`))
	if err != nil || strings.TrimSpace(copied) != markdown {
		t.Errorf("the button copied %q (%v); want the Markdown shown", copied, err)
	}

	// The API serves the same record.
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/circuits/%s/ProcessOrders/episodes/%d", srv.URL, demo.AppID, opened.Episode), nil)
	req.Header.Set("Authorization", "Bearer "+viewToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec struct {
		Closed       bool `json:"closed"`
		Acknowledged *struct {
			Actor string `json:"actor"`
		} `json:"acknowledged"`
		Errors []struct {
			Count int `json:"count"`
		} `json:"errors"`
		Markdown string `json:"markdown"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the episode: %d, %v", resp.StatusCode, err)
	}
	if !rec.Closed || rec.Acknowledged == nil || !strings.Contains(rec.Acknowledged.Actor, "oncall@example.com") || len(rec.Errors) != 3 || rec.Errors[0].Count != 90 ||
		!strings.Contains(rec.Markdown, "| 90 | Timeout talking to inventory") {
		t.Errorf("the API's record: %+v", rec)
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}

// item is one failure report item of the HTTP API.
func item(function string, at time.Time, count int, text string) string {
	b, _ := json.Marshal(map[string]any{"function": function, "at": at.UTC().Format(time.RFC3339), "count": count, "error": text})
	return string(b)
}

// waitState waits, on the real clock, until function's circuit in the
// demo app is what ok says (what, in words), and returns it.
func waitState(t *testing.T, srv *apptest.Server, function, what string, ok func(circuit.Circuit) bool) circuit.Circuit {
	t.Helper()
	return srv.WaitCircuit(t, demo.AppID, function, what, ok)
}
