package wording_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/wording"
)

// A circuit the evaluator opened is mailed with a link to resume it; one an
// operator switched off by hand is mailed as information only, so no
// recipient can undo a deliberate trip.
func TestOnlyCircuitsTheEvaluatorOpenedCarryAResumeLink(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	comp := composer(t, now)
	app := circuit.App{ID: "orders", DisplayName: "Orders"}
	for _, tc := range []struct {
		state    circuit.State
		link     bool
		subject  string
		mentions string
	}{
		{circuit.Open, true, "[Fusebox] Orders / Process is open: trigger off", "Review and resume"},
		{circuit.ForcedOpen, false, "[Fusebox] Orders / Process switched off by hand", "until an operator resumes it in Fusebox"},
	} {
		c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Recipients: []string{"ops@example.com"}}, State: tc.state, Episode: 4, ChangedAt: now, Reason: "why", Incarnation: "abc"}
		m := alerts.Message{ID: alerts.MessageID(c.ID(), 4, alerts.KindOpened, "ops@example.com"), Circuit: c.ID(), Episode: 4, Kind: alerts.KindOpened, To: "ops@example.com"}
		mail, err := comp.Compose(m, c, app)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(mail.Text, "/resume/") || strings.Contains(mail.HTML, "/resume/"); got != tc.link {
			t.Errorf("%s: resume link in the mail = %v, want %v", tc.state, got, tc.link)
		}
		if mail.Subject != tc.subject {
			t.Errorf("%s: subject %q, want %q", tc.state, mail.Subject, tc.subject)
		}
		if !strings.Contains(strings.ToLower(mail.Text), strings.ToLower(tc.mentions)) {
			t.Errorf("%s: the text does not say %q:\n%s", tc.state, tc.mentions, mail.Text)
		}
		if tc.link {
			token := mail.Text[strings.Index(mail.Text, "/resume/")+len("/resume/"):]
			token = strings.Fields(token)[0]
			l, err := comp.Signer.Verify(token, now)
			if err != nil || l.Incarnation != "abc" || l.Episode != 4 || l.Recipient != "ops@example.com" {
				t.Errorf("the link names %+v (err %v), want episode 4 of incarnation abc for ops@example.com", l, err)
			}
		}
	}
}

// The alert of a trip says what failed in the window before it opened:
// the top groups of error texts with their counts and instances, in the
// mail's text and HTML and in a channel's notice, read from the stored
// rows.
func TestATripsAlertSaysWhatFailed(t *testing.T) {
	srv := apptest.Start(t, nil)
	now := srv.Clock.Now()
	var reports []storage.Report
	for i, msg := range []string{"Timeout after 30 s reading 'orders/1'", "Timeout after 9 s reading 'orders/2'", "Login failed for user 'svc'"} {
		reports = append(reports, storage.Report{App: "orders", Function: "Process", Second: now.Add(-time.Duration(i+1) * time.Second), Count: 3 - i, Sample: msg})
	}
	if err := srv.App.Store.Failures.Record(t.Context(), "vm-1", reports); err != nil {
		t.Fatal(err)
	}
	signer, err := alerts.NewSigner("k", map[string][]byte{"k": []byte(strings.Repeat("k", 32))})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://fusebox.example.com")
	comp := wording.Composer{Signer: signer, BaseURL: base, LinkTTL: time.Hour, Now: srv.Clock.Now, Errors: &errortexts.Cache{Rows: srv.App.Store.Failures.Reader()}}
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 4, Window: 30 * time.Second}, State: circuit.Open, Episode: 1, ChangedAt: now, Reason: "5 failures in 30s (threshold 4)"}
	m := alerts.Message{ID: alerts.MessageID(c.ID(), 1, alerts.KindOpened, "ops@example.com"), Circuit: c.ID(), Episode: 1, Kind: alerts.KindOpened, To: "ops@example.com"}
	mail, err := comp.Compose(m, c, circuit.App{ID: "orders", Switch: circuit.SwitchARM})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"What failed, in the 30s before it opened", "5 × Timeout after 30 s reading 'orders/1' (vm-1)", "1 × Login failed for user 'svc' (vm-1)"} {
		if !strings.Contains(mail.Text, want) {
			t.Errorf("the mail's text lacks %q:\n%s", want, mail.Text)
		}
	}
	if !strings.Contains(mail.HTML, "5 × Timeout after 30 s reading &#39;orders/1&#39; (vm-1)") {
		t.Errorf("the mail's HTML lacks the timeouts:\n%s", mail.HTML)
	}
	n, err := comp.Notice(m, c, circuit.App{ID: "orders", Switch: circuit.SwitchARM})
	if err != nil {
		t.Fatal(err)
	}
	if f := n.Facts[len(n.Facts)-1]; f.Name != "What failed" || !strings.Contains(f.Value, "5 × Timeout") {
		t.Errorf("the notice's last fact: %+v", f)
	}
	if f := n.Facts[len(n.Facts)-2]; f.Name != "Switching" || !strings.Contains(f.Value, "restarts the app") {
		t.Errorf("the notice does not say what switching cost: %+v", f)
	}
	if !strings.Contains(mail.Text, "Writing the app's settings restarts the app: every other function of the app restarts with it") {
		t.Errorf("the mail does not say what switching cost:\n%s", mail.Text)
	}
}

// composer writes alerts at now, with links to https://fusebox.example.com
// signed by a test key.
func composer(t *testing.T, now time.Time) wording.Composer {
	t.Helper()
	signer, err := alerts.NewSigner("k", map[string][]byte{"k": []byte(strings.Repeat("k", 32))})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://fusebox.example.com")
	return wording.Composer{Signer: signer, BaseURL: base, LinkTTL: time.Hour, Now: func() time.Time { return now }}
}

// The trip mail of an Event Hubs function says the batches that failed
// before the trip were checkpointed past, and that the review page can
// replay them; other functions' mails say nothing of it.
func TestATripMailOfAnEventHubsFunctionOffersTheReplay(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	comp := composer(t, now)
	app := circuit.App{ID: "orders", DisplayName: "Orders"}
	for _, hub := range []string{"orders/$default", ""} {
		c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Recipients: []string{"ops@example.com"}, EventHub: hub},
			State: circuit.Open, Episode: 4, ChangedAt: now, Reason: "why"}
		m := alerts.Message{ID: alerts.MessageID(c.ID(), 4, alerts.KindOpened, "ops@example.com"), Circuit: c.ID(), Episode: 4, Kind: alerts.KindOpened, To: "ops@example.com"}
		mail, err := comp.Compose(m, c, app)
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{mail.Text, mail.HTML} {
			if says := strings.Contains(body, "resume\nfrom before the first failure") || strings.Contains(body, "resume from before the first failure"); says != (hub != "") {
				t.Errorf("hub %q: the mail offers the replay: %v\n%s", hub, says, body)
			}
		}
	}
}
