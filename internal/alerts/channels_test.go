package alerts_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/wording"
)

// channelSender is a sender with channels, whose SMTP client signs in
// with password.
func (r *rig) channelSender(smtpPort int, password string) *alerts.Sender {
	base, _ := url.Parse("http://fusebox.test")
	comp := wording.Composer{Signer: r.sign, BaseURL: base, LinkTTL: 72 * time.Hour, Now: r.clock.Now}
	jobWords := wording.JobComposer{Jobs: r.store.Jobs, BaseURL: base}
	return alerts.NewSender(r.store.Outbox, storage.Lists{Store: r.store},
		notify.SMTP{Host: "127.0.0.1", Port: smtpPort, TLS: "none", From: "fusebox@example.com", Username: "fusebox", Password: password, Timeout: 5 * time.Second},
		comp, alerts.SenderSettings{Clock: r.clock, FirstBackoff: 10 * time.Second, Channels: r.store.Channels,
			Poster: notify.Poster{Now: r.clock.Now, Egress: egress.Policy{AllowLoopback: true}}, Notices: notices{comp, jobWords}, Health: r.store.Status.DeliveryOf("test")})
}

type notices struct {
	wording.Composer
	jobs wording.JobComposer
}

func (n notices) JobNotice(ctx context.Context, m alerts.Message) (alerts.Notice, error) {
	return n.jobs.JobNotice(ctx, m)
}

// An SMTP server that refuses Fusebox's password (a rotation on the
// server's side) for a while: the mail waits, the destination shows as
// failing, and once the server accepts again each owed mail arrives once.
func TestPasswordRotationDelaysMailAndLosesNone(t *testing.T) {
	r := newRig(t)
	smtp := mailtest.Start(t)
	smtp.RequirePassword("rotated")
	s := r.channelSender(smtp.Port, "before-rotation")
	for range 4 {
		if err := s.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Minute)
	}
	if smtp.Refused() == 0 {
		t.Fatal("the server never refused the password: the test tests nothing")
	}
	queued, err := r.store.Outbox.Recent(t.Context(), 10)
	if err != nil || len(queued) != 2 {
		t.Fatalf("outbox: %d (err %v), want 2", len(queued), err)
	}
	for _, m := range queued {
		if m.State != alerts.Pending {
			t.Errorf("%s is %s after 535s, want pending: a rotated password must not lose mail (%s)", m.To, m.State, m.LastError)
		}
	}
	failing, err := r.store.Status.Delivery(t.Context())
	if err != nil || len(failing) != 1 || failing[0].Destination != "mail" || !strings.Contains(failing[0].LastError, "535") {
		t.Errorf("stored failing destinations = %+v (err %v), want mail with the 535", failing, err)
	}
	smtp.RequirePassword("before-rotation") // the server takes it again
	for range 3 {
		r.clock.Advance(11 * time.Minute) // past the capped backoff and its jitter
		if err := s.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(smtp.Messages()); n != 2 {
		t.Errorf("%d mails after the server accepted again, want 2 (one per recipient)", n)
	}
	if failing, _ := r.store.Status.Delivery(t.Context()); len(failing) != 0 {
		t.Errorf("still failing after delivery: %+v", failing)
	}
}

// hookReceiver answers 429 with Retry-After: 2 first, then 200.
type hookReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	hits []time.Time
	ids  []string
	body [][]byte
	hdr  []http.Header
}

func newHookReceiver(t *testing.T, now func() time.Time) *hookReceiver {
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h.mu.Lock()
		h.hits, h.ids, h.body, h.hdr = append(h.hits, now()), append(h.ids, req.Header.Get("webhook-id")), append(h.body, b), append(h.hdr, req.Header.Clone())
		first := len(h.hits) == 1
		h.mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.hits)
}

func TestWebhookReceiverAskingToWaitIsHonoured(t *testing.T) {
	r := newRig(t)
	hook := newHookReceiver(t, r.clock.Now)
	secret := alerts.NewWebhookSecret()
	if err := r.store.Channels.Create(t.Context(), alerts.Channel{ID: "hook", Name: "On-call hook", Kind: alerts.ChannelWebhook, URL: hook.URL, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	setChannels(t, r, "hook")
	smtp := mailtest.Start(t)
	s := r.channelSender(smtp.Port, "")
	pass := passer(t, s)
	pass()
	if hook.count() != 1 {
		t.Fatalf("%d webhook requests after the first pass, want 1", hook.count())
	}
	r.clock.Advance(1900 * time.Millisecond)
	pass()
	if hook.count() != 1 {
		t.Fatalf("the sender came back after 1.9 s; the receiver asked for 2")
	}
	r.clock.Advance(200 * time.Millisecond)
	pass()
	pass()
	if hook.count() != 2 {
		t.Fatalf("%d webhook requests, want 2: the 429, then one delivery", hook.count())
	}
	if hook.ids[0] != hook.ids[1] {
		t.Errorf("webhook-id changed across the retry: %s, %s", hook.ids[0], hook.ids[1])
	}
	wh, _ := standardwebhooks.NewWebhookRaw(mustKey(t, secret))
	if err := wh.VerifyIgnoringTimestamp(hook.body[1], hook.hdr[1]); err != nil {
		t.Errorf("the delivery does not verify: %v", err) // the fake clock is not the library's clock
	}
	if !strings.Contains(string(hook.body[1]), `"type":"circuit.opened"`) || !strings.Contains(string(hook.body[1]), "/circuits/") {
		t.Errorf("body %s", hook.body[1])
	}
	// Whoever runs a receiver, or reads a channel, may open the circuit's
	// page after signing in; only a mail's one recipient gets a link that
	// acts without sign-in.
	if strings.Contains(string(hook.body[1]), "/resume/") {
		t.Errorf("the webhook carries a resume link: %s", hook.body[1])
	}
	mails := smtp.Messages()
	if n := len(mails); n != 2 {
		t.Errorf("%d mails, want 2: the circuit's addresses still get theirs beside the channel", n)
	}
	for _, m := range mails {
		if !strings.Contains(m.Text, "/resume/") {
			t.Errorf("a mail to %v has no resume link", m.To)
		}
	}
}

// passer runs one pass of the sender under the test's fence, failing the
// test on an error of the pass itself.
func passer(t *testing.T, s *alerts.Sender) func() {
	return func() {
		t.Helper()
		if err := s.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
	}
}

func mustKey(t *testing.T, secret string) []byte {
	k, err := alerts.SecretKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func setChannels(t *testing.T, r *rig, ids ...string) {
	t.Helper()
	c, err := r.store.Circuits.Get(t.Context(), "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	c.Channels = ids
	if err := r.store.Circuits.UpdateSettings(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// A channel deleted while messages were owed to it fails them with a
// reason; the circuit's other destinations are unaffected.
func TestADeletedChannelFailsOnlyItsMessages(t *testing.T) {
	r := newRig(t)
	setChannels(t, r, "gone")
	smtp := mailtest.Start(t)
	s := r.channelSender(smtp.Port, "")
	if err := s.Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	msgs, _ := r.store.Outbox.Recent(t.Context(), 10)
	var failed []alerts.Message
	for _, m := range msgs {
		if m.State == alerts.Failed {
			failed = append(failed, m)
		}
	}
	if len(failed) != 1 || failed[0].To != "channel:gone" || !strings.Contains(failed[0].LastError, `"gone" does not exist`) {
		t.Errorf("failed = %+v, want the message to channel:gone, saying so", failed)
	}
	if n := len(smtp.Messages()); n != 2 {
		t.Errorf("%d mails, want the 2 to the circuit's addresses", n)
	}
}

// A mail channel sends one mail to its whole list.
func TestAMailChannelMailsItsList(t *testing.T) {
	r := newRig(t)
	if err := r.store.Channels.Create(t.Context(), alerts.Channel{ID: "team", Name: "Team", Kind: alerts.ChannelMail, Addresses: []string{"a@example.com", "b@example.com"}}); err != nil {
		t.Fatal(err)
	}
	setChannels(t, r, "team")
	smtp := mailtest.Start(t)
	if err := r.channelSender(smtp.Port, "").Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	var tos []string
	for _, m := range smtp.Messages() {
		tos = append(tos, m.To)
	}
	if got := strings.Join(tos, " | "); !strings.Contains(got, "a@example.com, b@example.com") || len(tos) != 3 {
		t.Errorf("mails to %s, want the 2 recipients and one mail to the channel's list", got)
	}
}

// A circuit that keeps flipping gets its first flips alerted one by one,
// then one summary for the rest of the hour.
func TestAFlappingCircuitGetsOneSummary(t *testing.T) {
	r := newRig(t)
	smtp := mailtest.Start(t)
	s := r.channelSender(smtp.Port, "")
	c, err := r.store.Circuits.Get(t.Context(), "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	c.Recipients = []string{"ops@example.com"}
	if err := r.store.Circuits.UpdateSettings(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		c, err = r.store.Circuits.Get(t.Context(), "orders", "Process")
		if err != nil {
			t.Fatal(err)
		}
		now := r.clock.Now()
		c.Episode, c.ChangedAt, c.AppliedEpisode = c.Episode+1, now, c.Episode+1
		c.RecentChanges = append(c.RecentChanges, now)
		if c.State == circuit.Open {
			c.State, c.Reason = circuit.Closed, "resumed by ops"
		} else {
			c.State, c.Reason = circuit.Open, fmt.Sprintf("flip %d", i)
		}
		if err := r.store.Circuits.Put(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if err := s.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Minute)
	}
	var summaries, single int
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, "is flapping") {
			summaries++
		} else {
			single++
		}
	}
	// The rig's circuit starts with one change; the first five flips
	// are alerted each (six changes in the hour), the seventh makes it
	// flapping.
	if summaries != 1 || single != 6 {
		t.Errorf("%d summaries and %d single alerts for 12 flips in 12 minutes, want 1 and 6", summaries, single)
	}
}

func TestAcknowledgedEpisodesGetNoReminders(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Recipients: []string{"ops@example.com"}}, State: circuit.Open, Episode: 4, ChangedAt: now}
	p := alerts.Policy{RemindEvery: 4 * time.Hour, MaxReminders: 3, Within: 24 * time.Hour}
	later := now.Add(9 * time.Hour)
	if got := len(alerts.Owed(c, c.Recipients, later, p)); got != 3 { // opened, reminder-1, reminder-2
		t.Fatalf("%d owed, want 3", got)
	}
	c.AckedEpisode = 4
	owed := alerts.Owed(c, c.Recipients, later, p)
	if len(owed) != 1 || owed[0].Kind != alerts.KindOpened {
		t.Errorf("owed after an acknowledgement = %+v, want the opening alert only", owed)
	}
	c.AckedEpisode = 3 // an earlier episode's acknowledgement does not count
	if got := len(alerts.Owed(c, c.Recipients, later, p)); got != 3 {
		t.Errorf("%d owed with an old acknowledgement, want 3", got)
	}
}

// A job that names no channel alerts its app's default channels.
func TestAJobAlertsItsAppsChannels(t *testing.T) {
	r := newRig(t)
	for _, n := range []string{storage.TableJobs, storage.TableRuns} {
		if err := r.store.Service.CreateTable(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan string, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		got <- string(b)
	}))
	defer recv.Close()
	if err := r.store.Channels.Create(t.Context(), alerts.Channel{ID: "ops", Name: "Ops", Kind: alerts.ChannelSlack, URL: recv.URL}); err != nil {
		t.Fatal(err)
	}
	app, err := r.store.Apps.Get(t.Context(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	app.Channels = []string{"ops"}
	if err := r.store.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	j := jobs.Job{ID: "11111111-2222-4333-8444-000000000009", Name: "Nightly export", Schedule: "0 * * * *", TimeZone: "UTC", AppID: "orders",
		Grace: 5 * time.Minute, CreatedAt: t0.Add(-3*time.Hour - time.Minute), Status: jobs.Up}
	if err := r.store.Jobs.Put(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	scanner := jobs.NewScanner(storage.ScannerStore{Store: r.store}, jobs.ScannerSettings{Clock: r.clock,
		Notify: alerts.JobNotifier(r.store.Outbox, storage.Lists{Store: r.store})})
	if err := scanner.Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	if err := r.channelSender(mailtest.Start(t).Port, "").Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if !strings.Contains(b, "Job Nightly export is missing") || !strings.Contains(b, "/jobs/"+j.ID) {
			t.Errorf("Slack got %s", b)
		}
	default:
		t.Fatal("the app's channel got nothing when its job went missing")
	}
}

// A webhook receiver that is down (connection refused) when the circuit
// opens, then comes up: after the backoff the alert arrives, once, and
// later passes send nothing more.
func TestAWebhookReceiverDownThenUpGetsEachAlertOnce(t *testing.T) {
	r := newRig(t)
	addr, _ := mailtest.FreeAddr(t)
	if err := r.store.Channels.Create(t.Context(), alerts.Channel{ID: "hook", Name: "On-call hook", Kind: alerts.ChannelWebhook,
		URL: "http://" + addr + "/hook", Secret: alerts.NewWebhookSecret()}); err != nil {
		t.Fatal(err)
	}
	setChannels(t, r, "hook")
	smtp := mailtest.Start(t)
	s := r.channelSender(smtp.Port, "")
	pass := passer(t, s)
	pass()
	failing := s.Failing()
	if len(failing) != 1 || !strings.Contains(failing[0].LastError, "refused") {
		t.Fatalf("failing destinations = %+v, want the webhook, refused", failing)
	}

	var mu sync.Mutex
	var ids []string
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		ids = append(ids, req.Header.Get("webhook-id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	up.Listener.Close()
	up.Listener = l
	up.Start()
	t.Cleanup(up.Close)

	r.clock.Advance(13 * time.Second) // past the first backoff, 10 s + 20 % jitter
	pass()
	r.clock.Advance(time.Hour)
	pass()
	pass()
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 1 || ids[0] == "" {
		t.Errorf("the receiver got %d deliveries (ids %v), want exactly 1", len(ids), ids)
	}
	if f := s.Failing(); len(f) != 0 {
		t.Errorf("still failing after the delivery: %+v", f)
	}
}
