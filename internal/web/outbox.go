package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/views"
)

// outboxList shows every alert message, its channel and its state.
func (s *NotifyPages) outboxList(c echo.Context) error {
	ctx := c.Request().Context()
	msgs, err := s.Outbox.Recent(ctx, 200)
	if err != nil {
		return err
	}
	chs, err := s.Channels.ListChannels(ctx)
	if err != nil {
		return err
	}
	byID := map[string]alerts.Channel{}
	for _, ch := range chs {
		byID[ch.ID] = ch
	}
	seen, err := s.messagesSeen(c)
	if err != nil {
		return err
	}
	failing, err := failingRows(ctx, s.Delivery, func(h alerts.Health) bool {
		return scopeOf(c).SeesDelivery(h.Destination, byID)
	})
	if err != nil {
		return err
	}
	m := views.Outbox{Page: s.page(c, "Notifications", "notifications"), CanAct: scopeOf(c).ActsAnywhere(), MailOff: s.Config.Mail.Host == "", Failing: failing}
	for _, msg := range msgs {
		if !seen(msg) {
			continue
		}
		tone := map[string]string{alerts.Sent: "ok", alerts.Failed: "bad", alerts.Sending: "info"}[msg.State]
		if tone == "" {
			tone = "warn"
		}
		channel, to := "mail", msg.To
		if id, ok := alerts.ChannelOf(msg.To); ok {
			channel, to = "(deleted)", id
			if ch, ok := byID[id]; ok {
				channel, to = ch.Kind, ch.Name
			}
		}
		m.Rows = append(m.Rows, views.OutboxRow{ID: msg.ID, Circuit: msg.Circuit, Episode: msg.Episode, Kind: msg.Kind, Channel: channel, To: to,
			State: msg.State, Tone: tone, Attempts: msg.Attempts, LastError: msg.LastError, CreatedAt: msg.CreatedAt, SentAt: msg.SentAt})
	}
	return render(c, http.StatusOK, views.OutboxPage(m))
}

// failingRows are the destinations the sender last found failing.
// Only those keep says the principal may see.
func failingRows(ctx context.Context, d alerts.DeliveryReader, keep func(alerts.Health) bool) ([]views.FailingRow, error) {
	hs, err := d.Delivery(ctx)
	if err != nil {
		return nil, err
	}
	var out []views.FailingRow
	for _, h := range hs {
		if !keep(h) {
			continue
		}
		r := views.FailingRow{Name: h.Name, Kind: h.Kind, Since: h.FailingSince.UTC().Format("Mon 2 Jan 15:04:05 MST"), Reason: h.LastError}
		if h.NextTry.After(h.FailingSince) {
			r.NextTry = h.NextTry.UTC().Format("15:04:05 MST")
		}
		out = append(out, r)
	}
	return out, nil
}

// outboxResend queues a sent or failed message again.
func (s *NotifyPages) outboxResend(c echo.Context) error {
	id := c.FormValue("id")
	msgs, err := s.Outbox.Recent(c.Request().Context(), 1000)
	if err != nil {
		return err
	}
	seen, err := s.messagesSeen(c)
	if err != nil {
		return err
	}
	acted, err := s.messagesActed(c)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.ID != id || !seen(m) { // another team's reads as no such message
			continue
		}
		if !acted(m) {
			return echo.NewHTTPError(http.StatusForbidden, "You may see this message but not send it again: that needs the operator role on its team.")
		}
		m.State, m.Attempts, m.NextAttempt, m.LastError = alerts.Pending, 0, s.Now(), ""
		if _, err := s.Outbox.Update(c.Request().Context(), lease.Fence{}, m); err != nil {
			if errors.Is(err, circuit.ErrConflict) {
				return echo.NewHTTPError(http.StatusConflict, "The message changed meanwhile; look again.")
			}
			return err
		}
		p, _ := principal(c)
		ctx, cancel := detached(c)
		defer cancel()
		if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "resent notification", Target: m.Circuit, Detail: m.Kind + " to " + m.To}); err != nil {
			return err
		}
		s.setFlash(c, "resent")
		return c.Redirect(http.StatusSeeOther, "/notifications")
	}
	return echo.NewHTTPError(http.StatusNotFound, "There is no such message.")
}
