package e2e_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestWaitingEventsExpireOnTheRealClock is the retention countdown as it
// is lived: the demo's hub keeps events an hour, and the oldest event
// waiting behind ProcessOrders' checkpoints arrived an hour less 15 s
// ago. Failures trip it; the page counts down on partition 1; the person
// on call is told the events begin to expire, and, as nobody
// acknowledged, the lead too; 15 s later the hub drops the first of them
// and both are told how many are gone, which the page then says.
func TestWaitingEventsExpireOnTheRealClock(t *testing.T) {
	// Not parallel: its page must be read within a 15 s countdown,
	// which a machine loaded by other journeys can miss.
	smtp := mailtest.Start(t)
	srv := apptest.StartWith(t, smtp.Env(), apptest.Options{RealClock: true, RetentionEvery: time.Second, HostInsightTTL: time.Second})
	ctx := t.Context()
	now := time.Now()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", now); err != nil {
		t.Fatal(err)
	}
	expires := now.Add(15 * time.Second)
	stream := demo.AgedStream(expires.Add(-time.Hour), 5, time.Hour, nil)
	ns := strings.ToLower(testenv.Prefix(t)) + ".servicebus.windows.net"
	if err := demo.SeedHostStorage(ctx, srv.App.Store, testenv.ConnectionString(t), now, demo.HostSeed{HubAddr: amqphubtest.Serve(t, stream.Served()), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.Escalate = circuit.Escalation{To: []string{"lead@example.com"}, After: time.Hour}
	if err := srv.App.Store.Circuits.UpdateSettings(ctx, ci); err != nil {
		t.Fatal(err)
	}

	postFailures(t, srv.URL, `{"failures": [`+item("ProcessOrders", time.Now().Add(-time.Second), 101, "Timeout talking to inventory")+`]}`)
	waitState(t, srv, "ProcessOrders", "open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	// A partition that does not answer within the page's read is named as
	// unread (a loaded machine); a person reloads, and so does the test,
	// a few times, well before the expiry.
	var got string
	for range 4 {
		p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="retention"]`)))
		if got = p.text(t, `[data-testid="retention"]`); !strings.Contains(got, "did not answer in time") || time.Until(expires) < 8*time.Second {
			break
		}
	}
	if !contains(got, "on partition 1; the hub keeps events 1h, so they begin to expire in ", expires.UTC().Format("15:04")) || time.Now().After(expires) {
		t.Fatalf("the circuit page says %q; want the countdown to partition 1's expiry at %s", got, expires.Format(time.TimeOnly))
	}

	soon, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return m.To == "oncall@example.com" && strings.Contains(m.Subject, "Events begin to expire in")
	}, 20*time.Second)
	if !ok {
		t.Fatalf("no mail to the person on call before the events expire; got %v", smtp.Messages())
	}
	if soon.At.After(expires) {
		t.Errorf("the reminder arrived at %s, after the events began to expire (%s)", soon.At.Format(time.StampMilli), expires.Format(time.StampMilli))
	}
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return m.To == "lead@example.com" && strings.Contains(m.Subject, "Escalated: events waiting")
	}, 20*time.Second); !ok {
		t.Fatalf("the lead was not told ahead of expiry; got %v", smtp.Messages())
	}

	gone, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return m.To == "oncall@example.com" && strings.Contains(m.Subject, "expired unread")
	}, 40*time.Second)
	if !ok {
		t.Fatalf("no mail once events expired; got %v", smtp.Messages())
	}
	if gone.At.Before(expires) {
		t.Errorf("the loss was told at %s, before the first event expired (%s)", gone.At.Format(time.StampMilli), expires.Format(time.StampMilli))
	}
	if !regexp.MustCompile(`\[Fusebox\] [1-9][0-9]* events expired unread`).MatchString(gone.Subject) || !strings.Contains(gone.Text, "resuming cannot bring them back") {
		t.Errorf("the loss mail does not say how many are gone: %s\n%s", gone.Subject, gone.Text)
	}
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return m.To == "lead@example.com" && strings.Contains(m.Subject, "expired unread")
	}, 20*time.Second); !ok {
		t.Errorf("the lead was not told of the loss; got %v", smtp.Messages())
	}
	p.do(t, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid="events-expired"]`)))
	if got := p.text(t, `[data-testid="events-expired"]`); !contains(got, "on orders/1", "resuming cannot bring them back") {
		t.Errorf("the page says %q; want the events lost on partition 1", got)
	}

	// The person on call resumes from the reminder's link; the episode's
	// record then shows the waiting counts kept while it was off and since.
	oncall := newPage(t)
	oncall.do(t, chromedp.Navigate(resumeLink(soon.Text)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resumed"]`)))
	resumed := waitState(t, srv, "ProcessOrders", "closed and switched on", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders/episodes/"+strconv.FormatInt(resumed.Episode-1, 10)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="episode-drain"]`)))
	if got := p.text(t, `[data-testid="episode-drain"]`); !contains(got, "At most ", " events waited") || !strings.Contains(got, "resume") {
		t.Errorf("the episode's catch-up says %q; want the most that waited and what came after the resume", got)
	}
}
