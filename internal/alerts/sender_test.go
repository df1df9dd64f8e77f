package alerts_test

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/internal/wording"
)

type rig struct {
	t     *testing.T
	store *storage.Store
	clock *clock.Fake
	sign  *alerts.Signer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	svc, _ := testenv.Storage(t)
	for _, n := range []string{storage.TableApps, storage.TableCircuits, storage.TableOutbox, storage.TableFailures, storage.TableChannels, storage.TableStatus} {
		if err := svc.CreateTable(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	st := storage.New(svc)
	if err := st.Apps.Put(t.Context(), circuit.App{ID: "orders", DisplayName: "Orders", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null"}); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	if err := st.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Recipients: []string{"ops@example.com", "lead@example.com"}}, State: circuit.Open, Episode: 1, ChangedAt: t0, Reason: "101 failures in 30s (threshold 100)", Actuation: circuit.Actuation{AppliedEpisode: 1}}); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, store: st, clock: clk, sign: signer(t, "k1")}
}

func (r *rig) sender(smtpPort int) *alerts.Sender {
	base, _ := url.Parse("http://fusebox.test")
	return alerts.NewSender(r.store.Outbox, storage.Lists{Store: r.store},
		notify.SMTP{Host: "127.0.0.1", Port: smtpPort, TLS: "none", From: "fusebox@example.com", Timeout: 5 * time.Second},
		wording.Composer{Signer: r.sign, BaseURL: base, LinkTTL: 72 * time.Hour, Now: r.clock.Now},
		alerts.SenderSettings{Clock: r.clock, FirstBackoff: 10 * time.Second})
}

var fence = lease.Fence{Lease: "mail/sender", Generation: 1}

func TestOneMailPerRecipientWithAWorkingResumeLink(t *testing.T) {
	r := newRig(t)
	smtp := mailtest.Start(t)
	s := r.sender(smtp.Port)
	for range 3 {
		if err := s.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
	}
	msgs := smtp.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d mails after three passes, want one per recipient (2)", len(msgs))
	}
	got := map[string]mailtest.Message{}
	for _, m := range msgs {
		got[m.To] = m
	}
	m := got["ops@example.com"]
	if m.Subject != "[Fusebox] Orders / Process is open: trigger off" {
		t.Errorf("subject %q", m.Subject)
	}
	for _, part := range []string{m.Text, m.HTML} {
		for _, want := range []string{"101 failures in 30s (threshold 100)", "more than 100 failures in 30s", "http://fusebox.test/circuits/orders/Process", "last checkpoint"} {
			if !strings.Contains(part, want) {
				t.Errorf("a part lacks %q", want)
			}
		}
	}
	link := regexp.MustCompile(`http://fusebox\.test/resume/([A-Za-z0-9_.-]+)`).FindStringSubmatch(m.Text)
	if link == nil {
		t.Fatalf("no resume link in the text part:\n%s", m.Text)
	}
	l, err := r.sign.Verify(link[1], r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if l.Circuit != "orders/Process" || l.Episode != 1 || l.Recipient != "ops@example.com" || !l.Expires.Equal(t0.Add(72*time.Hour)) {
		t.Errorf("link = %+v", l)
	}
	if !strings.Contains(m.HTML, `/resume/`+link[1]) {
		t.Error("the HTML part links elsewhere than the text part")
	}
}

func TestSMTPDownThenUpSendsEachMailOnce(t *testing.T) {
	r := newRig(t)
	addr, port := mailtest.FreeAddr(t)
	s := r.sender(port)
	if err := s.Pass(t.Context(), fence); err != nil {
		t.Fatal(err) // a mail that could not go out is retried, not an error of the pass
	}
	queued, err := r.store.Outbox.Recent(t.Context(), 10)
	if err != nil || len(queued) != 2 {
		t.Fatalf("outbox: %d messages (err %v), want 2", len(queued), err)
	}
	// The first message finds the server down; the destination then backs
	// off as a whole, so the second is not even tried.
	tried := 0
	for _, m := range queued {
		if m.State != alerts.Pending {
			t.Errorf("after a failed try: %+v, want pending", m)
		}
		if m.Attempts == 1 && m.LastError != "" {
			tried++
		}
	}
	if tried != 1 {
		t.Errorf("%d messages tried while the server was down, want 1 (the destination backs off)", tried)
	}
	if failing := s.Failing(); len(failing) != 1 || failing[0].Destination != "mail" || failing[0].LastError == "" {
		t.Errorf("failing destinations = %+v, want mail with its error", failing)
	}
	smtp := mailtest.StartOn(t, addr)
	if err := s.Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	if n := len(smtp.Messages()); n != 0 {
		t.Fatalf("%d mails sent before the backoff ended", n)
	}
	r.clock.Advance(13 * time.Second) // past 10 s + 20% jitter
	if err := s.Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Hour)
	if err := s.Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	if n := len(smtp.Messages()); n != 2 {
		t.Errorf("%d mails after the server came back, want 2 (one per recipient)", n)
	}
}

func TestTwoInstancesSharingTheOutboxSendOnce(t *testing.T) {
	r := newRig(t)
	smtp := mailtest.Start(t)
	a, b := r.sender(smtp.Port), r.sender(smtp.Port)
	var wg sync.WaitGroup
	for _, s := range []*alerts.Sender{a, b, a, b} {
		wg.Go(func() { _ = s.Pass(t.Context(), lease.Fence{}) })
	}
	wg.Wait()
	if n := len(smtp.Messages()); n != 2 {
		t.Errorf("%d mails from two instances, want 2 (one per recipient)", n)
	}
}

func TestMailForAnEndedEpisodeIsNotSent(t *testing.T) {
	r := newRig(t)
	addr, port := mailtest.FreeAddr(t)
	s := r.sender(port)
	_ = s.Pass(t.Context(), fence) // queued, SMTP down
	c, err := r.store.Circuits.Get(t.Context(), "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	resumed, fl, _ := circuit.Resume(c, "olivia", "", circuit.Counts{}, r.clock.Now())
	if err := r.store.Circuits.Transition(t.Context(), lease.Fence{}, resumed, fl); err != nil {
		t.Fatal(err)
	}
	smtp := mailtest.StartOn(t, addr)
	r.clock.Advance(time.Minute)
	if err := s.Pass(t.Context(), fence); err != nil {
		t.Fatal(err)
	}
	for _, m := range smtp.Messages() {
		if strings.Contains(m.Subject, "trigger off") {
			t.Errorf("an opening mail for the ended episode went out: %q", m.Subject)
		}
	}
	if n := len(smtp.Messages()); n != 2 {
		t.Errorf("%d mails, want the 2 resumed mails", n)
	}
}

// A trip the guardrail held is mailed as such, not as a resume.
func TestAHeldTripIsMailedAsHeld(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Recipients: []string{"ops@example.com"}}, State: circuit.Closed, Held: true, Episode: 2, ChangedAt: now}
	owed := alerts.Owed(c, c.Recipients, now, alerts.Policy{RemindEvery: 4 * time.Hour, MaxReminders: 3, Within: 24 * time.Hour})
	if len(owed) != 1 || owed[0].Kind != alerts.KindHeld {
		t.Errorf("owed = %+v, want one held mail", owed)
	}
}
