package notify

import (
	"context"
	"errors"
	"fmt"
	"html"
	"strconv"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/egress"
)

// Tester sends a channel's "send a test" message: mail through the SMTP
// server, the others through the poster.
type Tester struct {
	// Mail is nil when this instance has no SMTP server.
	Mail       *SMTP
	Poster     Poster
	FuseboxURL string
	Now        func() time.Time
}

// testTimeout bounds one test message, whatever the channel.
const testTimeout = 15 * time.Second

// Test sends ch a test message.
func (t Tester) Test(ctx context.Context, ch alerts.Channel) error {
	now := t.Now()
	n := alerts.TestNotice(ch, t.FuseboxURL, now)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	id := "test|" + ch.ID + "|" + strconv.FormatInt(now.UnixNano(), 10)
	if alerts.OnCall(ch.Kind) {
		// A test opens an incident of its own and resolves it at once, so
		// nobody is left with an open test incident.
		n.Incident += "/" + strconv.FormatInt(now.UnixNano(), 10)
		if err := t.Poster.Post(ctx, ch, id, n); err != nil {
			return err
		}
		n.Type = "test.resolved"
		return t.Poster.Post(ctx, ch, id+"|resolved", n)
	}
	if ch.Kind != alerts.ChannelMail {
		return t.Poster.Post(ctx, ch, id, n)
	}
	if t.Mail == nil {
		return errors.New("mail is off on this instance: set FUSEBOX_SMTP_HOST")
	}
	err := t.Mail.Send(ctx, alerts.Mail{To: ch.Addresses, Subject: "[Fusebox] " + n.Title, Text: n.Text + "\n\n" + n.LinkURL + "\n",
		HTML: "<p>" + html.EscapeString(n.Text) + "</p>", MessageID: fmt.Sprintf("<test-%d@fusebox>", now.UnixNano())})
	return mailFailure(err)
}

// mailFailure words a failed test mail for the page: what kind of failure,
// never the server's reply, which the operator did not write and the page
// must not repeat.
func mailFailure(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, alerts.ErrPermanent):
		return errors.New("the mail server refused it for good (check the sender, the addresses and the server's log)")
	}
	if class := egress.Class(err); class != "failed" {
		return errors.New("the mail server: " + class)
	}
	return errors.New("the mail server did not take it now; send the test again later")
}
