package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/telemetry"
)

// SMTP sends through one server.
type SMTP struct {
	Host     string
	Port     int
	Username string
	Password string
	TLS      string // mandatory, opportunistic or none
	From     string
	Timeout  time.Duration
}

// Send delivers one mail. A refusal the server calls permanent (5xx)
// wraps alerts.ErrPermanent.
func (s SMTP) Send(ctx context.Context, m alerts.Mail) (err error) {
	ctx, span := telemetry.Tracer().Start(ctx, "smtp send", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("server.address", s.Host), attribute.Int("server.port", s.Port)))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, "not sent") // the error may name the recipient: not put on the span
		}
		span.End()
	}()
	msg := gomail.NewMsg()
	if err := msg.From(s.From); err != nil {
		return fmt.Errorf("%w: sender %q: %v", alerts.ErrPermanent, s.From, err)
	}
	if err := msg.To(m.To...); err != nil {
		return fmt.Errorf("%w: recipients %q: %v", alerts.ErrPermanent, m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(strings.Trim(m.MessageID, "<>"))
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)

	policy := gomail.TLSMandatory
	switch s.TLS {
	case "opportunistic":
		policy = gomail.TLSOpportunistic
	case "none":
		policy = gomail.NoTLS
	}
	opts := []gomail.Option{gomail.WithPort(s.Port), gomail.WithTLSPolicy(policy), gomail.WithTimeout(max(s.Timeout, 5*time.Second))}
	if s.Username != "" {
		auth := gomail.SMTPAuthPlain
		if policy == gomail.NoTLS {
			auth = gomail.SMTPAuthPlainNoEnc
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(s.Username), gomail.WithPassword(s.Password))
	}
	client, err := gomail.NewClient(s.Host, opts...)
	if err != nil {
		return fmt.Errorf("%w: %v", alerts.ErrPermanent, err)
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		var se *gomail.SendError
		if errors.As(err, &se) && refusesMessage(se.ErrorCode()) {
			return fmt.Errorf("%w: %v", alerts.ErrPermanent, err)
		}
		return fmt.Errorf("notify: smtp: %w", err)
	}
	return nil
}

// refusesMessage tells the SMTP replies that refuse this message for good
// — no such mailbox (550, 551, 553), too big (552), rejected content
// (554), a malformed address (501) — from those about the server or the
// account: a rotated password (535), authentication required (530) or
// a server busy or shutting down (421, 4xx). Those keep retrying: the
// mail is still owed once the server is fixed.
func refusesMessage(code int) bool {
	switch code {
	case 501, 550, 551, 552, 553, 554:
		return true
	}
	return false
}
