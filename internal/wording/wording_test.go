package wording_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/wording"
)

// A circuit the evaluator opened is mailed with a link to resume it; one an
// operator switched off by hand is mailed as information only, so no
// recipient can undo a deliberate trip.
func TestOnlyCircuitsTheEvaluatorOpenedCarryAResumeLink(t *testing.T) {
	signer, err := alerts.NewSigner("k", map[string][]byte{"k": []byte(strings.Repeat("k", 32))})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://fusebox.example.com")
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	comp := wording.Composer{Signer: signer, BaseURL: base, LinkTTL: time.Hour, Now: func() time.Time { return now }}
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
		c := circuit.Circuit{AppID: "orders", Function: "Process", Threshold: 100, Window: 30 * time.Second, State: tc.state, Episode: 4,
			ChangedAt: now, Reason: "why", Incarnation: "abc", Recipients: []string{"ops@example.com"}}
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
			l, err := signer.Verify(token, now)
			if err != nil || l.Incarnation != "abc" || l.Episode != 4 || l.Recipient != "ops@example.com" {
				t.Errorf("the link names %+v (err %v), want episode 4 of incarnation abc for ops@example.com", l, err)
			}
		}
	}
}
