package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// delivery is one request a channel receiver got.
type delivery struct {
	at     time.Time
	body   []byte
	header http.Header
}

// chatReceiver is a real HTTP server standing in for Teams, Slack or a
// webhook receiver; each request arrives on its channel.
type chatReceiver struct {
	*httptest.Server
	got chan delivery
}

func newChatReceiver(t *testing.T) *chatReceiver {
	r := &chatReceiver{got: make(chan delivery, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.got <- delivery{at: time.Now(), body: b, header: req.Header.Clone()}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(r.Close)
	return r
}

// next waits for a request whose body contains want.
func (r *chatReceiver) next(t *testing.T, what, want string) delivery {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case d := <-r.got:
			if strings.Contains(string(d.body), want) {
				return d
			}
		case <-deadline:
			t.Fatalf("%s: nothing containing %q within 20 s", what, want)
		}
	}
}

// TestRealClockChannelsJourney walks alerts to chat on the real clock: an
// operator makes a Teams channel in the browser and sends a test; the
// circuit names Teams, Slack and a webhook; failures past the threshold
// open it; each channel gets its alert (the webhook signed so that the
// Standard Webhooks library verifies it); the Teams card's button opens
// the review page, whose Resume closes the circuit; every channel then
// hears that it resumed.
func TestRealClockChannelsJourney(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartRealClock(t, smtp.Env())
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	teams, slack, hook := newChatReceiver(t), newChatReceiver(t), newChatReceiver(t)

	// The operator makes the Teams channel and sends a test.
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	p.do(t,
		chromedp.Navigate(srv.URL+"/channels/new"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="channel-form"]`)),
		chromedp.SendKeys(chromedp.CSS("#id"), "ops-teams"),
		chromedp.SetValue(chromedp.CSS("#kind"), "teams"),
		chromedp.SendKeys(chromedp.CSS("#name"), "Ops in Teams"),
		chromedp.SendKeys(chromedp.CSS("#url"), teams.URL+"/workflows/abc/triggers/manual/paths/invoke"),
		chromedp.Click(chromedp.CSS(`[data-testid="save-channel"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="test-channel"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="test-channel"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	if got := p.text(t, `[role="status"]`); !strings.Contains(got, "delivered to Ops in Teams") {
		t.Fatalf("after Send a test the page says %q", got)
	}
	teams.next(t, "Teams test", "Fusebox test message")
	if where := p.text(t, `[data-channel="ops-teams"]`); strings.Contains(where, "/workflows/") || !strings.Contains(where, "http://127.0.0.1") {
		t.Errorf("the channels page shows %q: want the host only, never the secret path", where)
	}

	secret := alerts.NewWebhookSecret()
	for _, ch := range []alerts.Channel{
		{ID: "ops-slack", Name: "Ops in Slack", Kind: alerts.ChannelSlack, URL: slack.URL + "/services/T0/B0/x"},
		{ID: "ops-hook", Name: "Pager hook", Kind: alerts.ChannelWebhook, URL: hook.URL + "/fusebox", Secret: secret},
	} {
		if err := srv.App.Store.Channels.Create(t.Context(), ch); err != nil {
			t.Fatal(err)
		}
	}
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	c.Channels = []string{"ops-teams", "ops-slack", "ops-hook"}
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), c); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	reportOverThreshold(t, srv.URL)

	card := teams.next(t, "Teams alert", "ProcessOrders")
	t.Logf("trip to delivery: teams %s", card.at.Sub(start).Round(time.Millisecond))
	s := slack.next(t, "Slack alert", "ProcessOrders")
	t.Logf("trip to delivery: slack %s", s.at.Sub(start).Round(time.Millisecond))
	h := hook.next(t, "webhook alert", `"circuit.opened"`)
	t.Logf("trip to delivery: webhook %s", h.at.Sub(start).Round(time.Millisecond))
	if _, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "ProcessOrders is open") }, 20*time.Second); !ok {
		t.Fatal("no mail")
	}
	t.Logf("trip to delivery: mail (received by then) %s", time.Since(start).Round(time.Millisecond))

	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(h.body, h.header); err != nil {
		t.Errorf("the webhook does not verify with its secret: %v", err)
	}

	// The Teams card's only action opens the circuit's page, behind
	// sign-in: everyone in a channel reads the card, so it carries no link
	// that acts without signing in.
	var msg struct {
		Attachments []struct {
			Content struct {
				Actions []struct{ Type, URL string }
			}
		}
	}
	if err := json.Unmarshal(card.body, &msg); err != nil || len(msg.Attachments) != 1 || len(msg.Attachments[0].Content.Actions) != 1 {
		t.Fatalf("card %s (err %v)", card.body, err)
	}
	action := msg.Attachments[0].Content.Actions[0]
	if action.Type != "Action.OpenUrl" || !strings.HasSuffix(action.URL, "/circuits/"+demo.AppID+"/ProcessOrders") {
		t.Fatalf("the card's action is %+v, want Action.OpenUrl to the circuit's page", action)
	}
	for name, body := range map[string][]byte{"teams": card.body, "webhook": h.body} {
		if strings.Contains(string(body), "/resume/") {
			t.Errorf("the %s notice carries a resume link: %s", name, body)
		}
	}
	// A channel member who is not signed in is asked to sign in, and
	// nothing changes.
	review := newPage(t)
	review.do(t, chromedp.Navigate(action.URL), chromedp.WaitVisible(chromedp.CSS("#username")))
	if got, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders"); got.State != circuit.Open {
		t.Fatalf("circuit %s before anyone pressed Resume", got.State)
	}
	review.signIn(t, srv.URL, "olivia")
	review.do(t,
		chromedp.Navigate(action.URL),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	for name, r := range map[string]*chatReceiver{"teams": teams, "slack": slack} {
		r.next(t, name+" resumed", "ProcessOrders resumed")
	}
	hook.next(t, "webhook resumed", `"circuit.resumed"`)
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}
