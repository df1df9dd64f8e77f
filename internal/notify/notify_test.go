package notify_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/notify"
)

// receiver is a real HTTP server that keeps what it was sent and answers
// what the test says.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	answer func(w http.ResponseWriter, n int)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, n int)) *receiver {
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies, r.heads = append(r.bodies, b), append(r.heads, req.Header.Clone())
		n := len(r.bodies)
		r.mu.Unlock()
		if r.answer != nil {
			r.answer(w, n)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) last(t *testing.T) ([]byte, http.Header) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) == 0 {
		t.Fatal("the receiver got nothing")
	}
	return r.bodies[len(r.bodies)-1], r.heads[len(r.heads)-1]
}

var loopback = egress.Policy{AllowLoopback: true}

var notice = alerts.Notice{Type: "circuit.opened", Title: "Orders / Process is open: trigger off", Text: "Fusebox switched off the trigger of Process <because> 101 failures & more.",
	Facts:   []alerts.Fact{{Name: "Function", Value: "Process"}, {Name: "App", Value: "Orders"}, {Name: "State", Value: "open"}, {Name: "Why", Value: "101 failures in 30s"}, {Name: "Rule", Value: "more than 100 failures in 30s"}, {Name: "When", Value: "Mon 30 Nov 2026 09:00:00 UTC"}},
	LinkURL: "https://fusebox.example/resume/abc.def", LinkText: "Review and resume", At: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	Data: map[string]any{"app": "orders", "function": "Process", "episode": 3}}

func TestTeamsGetsAnAdaptiveCard(t *testing.T) {
	r := newReceiver(t, nil)
	ch := alerts.Channel{ID: "ops", Name: "Ops", Kind: alerts.ChannelTeams, URL: r.URL + "/workflows/secret-path"}
	if err := (notify.Poster{Egress: loopback}).Post(t.Context(), ch, "m1", notice); err != nil {
		t.Fatal(err)
	}
	body, hdr := r.last(t)
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var msg struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Type    string `json:"type"`
				Version string `json:"version"`
				Body    []struct {
					Type  string `json:"type"`
					Text  string `json:"text"`
					Wrap  *bool  `json:"wrap"`
					Facts []struct{ Title, Value string }
				} `json:"body"`
				Actions []struct{ Type, Title, URL string } `json:"actions"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Attachments) != 1 || msg.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("not a Workflows message with one Adaptive Card: %s", body)
	}
	card := msg.Attachments[0].Content
	if card.Type != "AdaptiveCard" || card.Version != "1.4" {
		t.Errorf("card type %q version %q, want AdaptiveCard 1.4", card.Type, card.Version)
	}
	var facts []string
	for _, b := range card.Body {
		switch b.Type {
		case "TextBlock":
			if b.Wrap == nil || !*b.Wrap {
				t.Errorf("TextBlock %q does not wrap", b.Text)
			}
		case "FactSet":
			for _, f := range b.Facts {
				facts = append(facts, f.Title+"="+f.Value)
			}
		default:
			t.Errorf("unexpected element %q", b.Type)
		}
	}
	if got := strings.Join(facts, ";"); got != "Function=Process;App=Orders;State=open;Why=101 failures in 30s;Rule=more than 100 failures in 30s;When=Mon 30 Nov 2026 09:00:00 UTC" {
		t.Errorf("facts = %s", got)
	}
	if len(card.Actions) != 1 || card.Actions[0].Type != "Action.OpenUrl" || card.Actions[0].URL != notice.LinkURL {
		t.Errorf("actions = %+v, want one Action.OpenUrl to the review page", card.Actions)
	}
}

func TestSlackGetsBlockKitWithAFallback(t *testing.T) {
	r := newReceiver(t, func(w http.ResponseWriter, _ int) { _, _ = io.WriteString(w, "ok") })
	ch := alerts.Channel{ID: "ops", Name: "Ops", Kind: alerts.ChannelSlack, URL: r.URL + "/services/T/B/x"}
	if err := (notify.Poster{Egress: loopback}).Post(t.Context(), ch, "m1", notice); err != nil {
		t.Fatal(err)
	}
	body, _ := r.last(t)
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Type, Text string
			} `json:"text"`
			Fields   []struct{ Type, Text string } `json:"fields"`
			Elements []struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Text, notice.Title) || !strings.Contains(msg.Text, notice.LinkURL) {
		t.Errorf("fallback text %q lacks the title or the link", msg.Text)
	}
	var kinds []string
	for _, b := range msg.Blocks {
		kinds = append(kinds, b.Type)
		switch b.Type {
		case "section":
			if b.Text != nil && !strings.Contains(b.Text.Text, "&lt;because&gt; 101 failures &amp; more") {
				t.Errorf("section text not escaped for mrkdwn: %q", b.Text.Text)
			}
			if b.Fields != nil && (len(b.Fields) != 6 || b.Fields[0].Text != "*Function*\nProcess") {
				t.Errorf("fields = %+v", b.Fields)
			}
		case "actions":
			if len(b.Elements) != 1 || b.Elements[0].Type != "button" || b.Elements[0].URL != notice.LinkURL {
				t.Errorf("actions = %+v, want one button to the review page", b.Elements)
			}
		}
	}
	if got := strings.Join(kinds, ","); got != "header,section,section,actions" {
		t.Errorf("blocks %s", got)
	}
}

// A receiver verifies the webhook with the Standard Webhooks library, an
// implementation independent of Fusebox's.
func TestWebhookIsSignedPerStandardWebhooks(t *testing.T) {
	r := newReceiver(t, func(w http.ResponseWriter, _ int) { w.WriteHeader(http.StatusNoContent) })
	old, cur := alerts.NewWebhookSecret(), alerts.NewWebhookSecret()
	now := time.Now()
	ch := alerts.Channel{ID: "hook", Name: "Hook", Kind: alerts.ChannelWebhook, URL: r.URL, Secret: cur, OldSecret: old, OldUntil: now.Add(time.Hour)}
	if err := (notify.Poster{Egress: loopback}).Post(t.Context(), ch, "orders/Process|0000000000000000003|opened|channel:hook", notice); err != nil {
		t.Fatal(err)
	}
	body, hdr := r.last(t)
	for _, secret := range []string{cur, old} { // during a rotation both verify
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, hdr); err != nil {
			t.Errorf("the library does not verify the delivery with %s…: %v", secret[:10], err)
		}
	}
	if n := len(strings.Fields(hdr.Get("webhook-signature"))); n != 2 {
		t.Errorf("%d signatures during a rotation, want 2", n)
	}
	stranger, _ := standardwebhooks.NewWebhook(alerts.NewWebhookSecret())
	if stranger.Verify(body, hdr) == nil {
		t.Error("a delivery verifies with a secret it was not signed with")
	}
	if id := hdr.Get("webhook-id"); !strings.HasPrefix(id, "msg_") || strings.Contains(id, "orders") {
		t.Errorf("webhook-id %q, want msg_… without the names in the outbox id", id)
	}
	var ev struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "circuit.opened" || !ev.Timestamp.Equal(notice.At) || ev.Data["function"] != "Process" || ev.Data["url"] != notice.LinkURL {
		t.Errorf("event = %+v", ev)
	}
	// Past the overlap only the new secret signs.
	ch.OldUntil = now.Add(-time.Second)
	if err := (notify.Poster{Egress: loopback}).Post(t.Context(), ch, "m2", notice); err != nil {
		t.Fatal(err)
	}
	_, hdr = r.last(t)
	if n := len(strings.Fields(hdr.Get("webhook-signature"))); n != 1 {
		t.Errorf("%d signatures after the overlap, want 1", n)
	}
}

// The specification's published test vector.
func TestSignMatchesTheSpecVector(t *testing.T) {
	h := http.Header{}
	err := notify.Sign(h, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("webhook-signature"), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
	if h.Get("webhook-timestamp") != "1614265330" || h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" {
		t.Errorf("headers %v", h)
	}
}

func TestReceiverAnswersAreClassified(t *testing.T) {
	big := "RECEIVER-SAYS " + strings.Repeat("x", 10<<20)
	cases := []struct {
		name      string
		answer    func(w http.ResponseWriter, n int)
		permanent bool
		wait      time.Duration
	}{
		{"429 with Retry-After", func(w http.ResponseWriter, _ int) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		}, false, 2 * time.Second},
		{"503 with an absurd Retry-After is capped", func(w http.ResponseWriter, _ int) {
			w.Header().Set("Retry-After", "999999")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false, notify.MaxRetryAfter},
		{"500", func(w http.ResponseWriter, _ int) { w.WriteHeader(http.StatusInternalServerError) }, false, 0},
		{"408", func(w http.ResponseWriter, _ int) { w.WriteHeader(http.StatusRequestTimeout) }, false, 0},
		{"404 is permanent", func(w http.ResponseWriter, _ int) { w.WriteHeader(http.StatusNotFound) }, true, 0},
		{"400 with a huge body", func(w http.ResponseWriter, _ int) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, big)
		}, true, 0},
		{"a redirect is not followed", func(w http.ResponseWriter, _ int) {
			w.Header().Set("Location", "https://elsewhere.example/")
			w.WriteHeader(http.StatusFound)
		}, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, tc.answer)
			ch := alerts.Channel{ID: "ops", Name: "Ops", Kind: alerts.ChannelSlack, URL: r.URL + "/services/SECRETPATH"}
			err := (notify.Poster{Egress: loopback}).Post(t.Context(), ch, "m1", notice)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, alerts.ErrPermanent); got != tc.permanent {
				t.Errorf("permanent = %v, want %v: %v", got, tc.permanent, err)
			}
			var ra *alerts.RetryAfterError
			if tc.wait > 0 && (!errors.As(err, &ra) || ra.After != tc.wait) {
				t.Errorf("error %v, want a wait of %s", err, tc.wait)
			}
			if strings.Contains(err.Error(), "SECRETPATH") {
				t.Errorf("the error carries the secret URL: %v", err)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("the error is %d bytes long: the answer was not cut", len(err.Error()))
			}
			if strings.Contains(err.Error(), "RECEIVER-SAYS") {
				t.Errorf("the error carries what the receiver answered: %.100s", err)
			}
		})
	}
}

// A receiver that does not answer costs at most the poster's timeout,
// and the error names neither the URL's path nor hangs.
func TestSlowReceiverTimesOut(t *testing.T) {
	release := make(chan struct{})
	r := newReceiver(t, func(w http.ResponseWriter, _ int) { <-release })
	defer close(release)
	ch := alerts.Channel{ID: "ops", Name: "Ops", Kind: alerts.ChannelTeams, URL: r.URL + "/SECRETPATH"}
	start := time.Now()
	err := (notify.Poster{Egress: loopback, Timeout: 300 * time.Millisecond}).Post(t.Context(), ch, "m1", notice)
	took := time.Since(start)
	if err == nil || errors.Is(err, alerts.ErrPermanent) || strings.Contains(err.Error(), "SECRETPATH") {
		t.Fatalf("err = %v, want a retryable timeout without the URL", err)
	}
	if took > 5*time.Second {
		t.Errorf("the post took %s with a 300ms timeout", took)
	}
}

func TestChannelURLsMustBeHTTPS(t *testing.T) {
	for _, tc := range []struct {
		url      string
		loopback bool
		ok       bool
	}{
		{"https://prod-00.westeurope.logic.azure.com/workflows/x", false, true},
		{"http://hooks.example.com/x", false, false},
		{"http://hooks.example.com/x", true, false},
		{"http://127.0.0.1:8080/x", true, true},
		{"http://127.0.0.1:8080/x", false, false},
		{"https://user:pw@hooks.example.com/x", false, false},
		{"ftp://hooks.example.com/x", false, false},
		{"not a url", false, false},
	} {
		err := alerts.Channel{ID: "ops", Name: "Ops", Kind: alerts.ChannelSlack, URL: tc.url}.Validate(tc.loopback)
		if (err == nil) != tc.ok {
			t.Errorf("%s (loopback allowed %v): err %v, want ok %v", tc.url, tc.loopback, err, tc.ok)
		}
	}
}
