package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/views"
)

// outboxList shows every alert mail and its state.
func (s *Server) outboxList(c echo.Context) error {
	msgs, err := s.Outbox.Recent(c.Request().Context(), 200)
	if err != nil {
		return err
	}
	m := views.Outbox{Page: s.page(c, "Mail", "mail"), CanAct: canAct(c), MailOff: s.Config.Mail.Host == ""}
	for _, msg := range msgs {
		tone := map[string]string{alerts.Sent: "ok", alerts.Failed: "bad", alerts.Sending: "info"}[msg.State]
		if tone == "" {
			tone = "warn"
		}
		m.Rows = append(m.Rows, views.OutboxRow{ID: msg.ID, Circuit: msg.Circuit, Episode: msg.Episode, Kind: msg.Kind, To: msg.To,
			State: msg.State, Tone: tone, Attempts: msg.Attempts, LastError: msg.LastError, CreatedAt: msg.CreatedAt, SentAt: msg.SentAt})
	}
	return render(c, http.StatusOK, views.OutboxPage(m))
}

// outboxResend queues a sent or failed message again.
func (s *Server) outboxResend(c echo.Context) error {
	id := c.FormValue("id")
	msgs, err := s.Outbox.Recent(c.Request().Context(), 1000)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.ID != id {
			continue
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
		if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "resent mail", Target: m.Circuit, Detail: m.Kind + " to " + m.To}); err != nil {
			return err
		}
		s.setFlash(c, "resent")
		return c.Redirect(http.StatusSeeOther, "/mail")
	}
	return echo.NewHTTPError(http.StatusNotFound, "There is no such message.")
}
