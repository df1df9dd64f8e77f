package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

// Message states.
const (
	Pending = "pending"
	Sending = "sending"
	Sent    = "sent"
	Failed  = "failed" // permanently: the server refused it, or too many tries
)

// Kinds of message.
const (
	KindOpened  = "opened"
	KindResumed = "resumed"
	KindHeld    = "held" // a trip the app's guardrail held
)

// Message is one mail to one recipient about one episode of one circuit.
type Message struct {
	ID          string // derived: circuit, episode, kind, recipient
	Circuit     string // app/function
	Episode     int64
	Kind        string // opened, reminder-N, resumed
	To          string
	State       string
	Attempts    int
	NextAttempt time.Time
	LastError   string
	CreatedAt   time.Time
	SentAt      time.Time
	ClaimedAt   time.Time
	Version     string
}

// MessageID is the outbox key of a message: the same circuit, episode,
// kind and recipient always give the same message.
func MessageID(circuitID string, episode int64, kind, to string) string {
	return fmt.Sprintf("%s|%019d|%s|%s", circuitID, episode, kind, to)
}

// Outbox stores messages. Ensure inserts unless the ID exists; Update is
// conditional on Version and reports a lost race as circuit.ErrConflict.
type Outbox interface {
	Ensure(ctx context.Context, m Message) error
	Due(ctx context.Context, now, staleClaims time.Time) ([]Message, error)
	Update(ctx context.Context, f lease.Fence, m Message) (Message, error)
}

// Circuits is what the sender reads to know which mails are owed.
type Circuits interface {
	ListCircuits(ctx context.Context) ([]circuit.Circuit, error)
	ListApps(ctx context.Context) ([]circuit.App, error)
}

// Mail is one message ready for SMTP.
type Mail struct {
	To, Subject, Text, HTML, MessageID string
}

// Mailer hands mail to an SMTP server. An error wrapping ErrPermanent will
// not succeed on retry.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}

// ErrPermanent marks a refusal that retrying will not change.
var ErrPermanent = errors.New("alerts: permanent failure")

// Composer turns a message into mail.
type Composer interface {
	Compose(m Message, c circuit.Circuit, app circuit.App) (Mail, error)
}

// JobMailer writes mail about jobs (messages whose Circuit is "job:<id>").
type JobMailer interface {
	ComposeJob(ctx context.Context, m Message) (Mail, error)
}

// JobPrefix marks outbox messages about jobs rather than circuits.
const JobPrefix = "job:"

// SenderSettings tune the sender. Zero values take the defaults.
type SenderSettings struct {
	ClaimTTL       time.Duration // a claim older than this is retried; default 5m
	MaxAttempts    int           // before a message fails for good; default 8
	FirstBackoff   time.Duration // default 10s, doubling with jitter...
	MaxBackoff     time.Duration // ...up to 30m
	RemindEvery    time.Duration // while open; default 4h
	MaxReminders   int           // default 3
	MailableWithin time.Duration // episodes older than this get no first mail; default 24h
	Clock          clock.Clock
	Logger         *slog.Logger
	// Jobs writes mail about jobs; nil leaves such messages undelivered.
	Jobs JobMailer
}

// Sender sweeps circuits for owed mail and delivers the outbox. Run it
// under a lease; its claims are fenced.
type Sender struct {
	outbox   Outbox
	circuits Circuits
	mailer   Mailer
	composer Composer
	s        SenderSettings
}

// NewSender fills defaults.
func NewSender(o Outbox, c Circuits, m Mailer, comp Composer, s SenderSettings) *Sender {
	if s.ClaimTTL <= 0 {
		s.ClaimTTL = 5 * time.Minute
	}
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = 8
	}
	if s.FirstBackoff <= 0 {
		s.FirstBackoff = 10 * time.Second
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = 30 * time.Minute
	}
	if s.RemindEvery <= 0 {
		s.RemindEvery = 4 * time.Hour
	}
	if s.MaxReminders < 0 {
		s.MaxReminders = 0
	} else if s.MaxReminders == 0 {
		s.MaxReminders = 3
	}
	if s.MailableWithin <= 0 {
		s.MailableWithin = 24 * time.Hour
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sender{outbox: o, circuits: c, mailer: m, composer: comp, s: s}
}

// Pass makes sure every owed message is in the outbox, then sends what is due.
func (s *Sender) Pass(ctx context.Context, f lease.Fence) error {
	now := s.s.Clock.Now()
	cs, err := s.circuits.ListCircuits(ctx)
	if err != nil {
		return err
	}
	apps, err := s.circuits.ListApps(ctx)
	if err != nil {
		return err
	}
	var errs []error
	byID := map[string]circuit.Circuit{}
	for _, c := range cs {
		byID[c.ID()] = c
		for _, m := range Owed(c, now, s.s.RemindEvery, s.s.MaxReminders, s.s.MailableWithin) {
			if err := s.outbox.Ensure(ctx, m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	appByID := map[string]circuit.App{}
	for _, a := range apps {
		appByID[a.ID] = a
	}
	due, err := s.outbox.Due(ctx, now, now.Add(-s.s.ClaimTTL))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, m := range due {
		if err := s.deliver(ctx, f, m, byID, appByID, now); err != nil {
			if errors.Is(err, lease.ErrFenced) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Owed lists the messages a circuit's current episode calls for: the
// opening mail and its reminders while it is open, and a resumed mail once
// it closed again. Messages are keyed, so listing them again changes nothing.
func Owed(c circuit.Circuit, now time.Time, remindEvery time.Duration, maxReminders int, within time.Duration) []Message {
	if c.Episode < 1 || len(c.Recipients) == 0 || now.Sub(c.ChangedAt) > within+time.Duration(maxReminders)*remindEvery {
		return nil
	}
	var kinds []string
	switch {
	case c.State.TriggerOff():
		if now.Sub(c.ChangedAt) <= within {
			kinds = append(kinds, KindOpened)
		}
		for n := 1; n <= maxReminders; n++ {
			if !now.Before(c.ChangedAt.Add(time.Duration(n) * remindEvery)) {
				kinds = append(kinds, fmt.Sprintf("reminder-%d", n))
			}
		}
	case c.Held && now.Sub(c.ChangedAt) <= within:
		kinds = append(kinds, KindHeld)
	case c.State == circuit.Closed && now.Sub(c.ChangedAt) <= within:
		kinds = append(kinds, KindResumed)
	}
	var out []Message
	for _, k := range kinds {
		for _, to := range c.Recipients {
			out = append(out, Message{ID: MessageID(c.ID(), c.Episode, k, to), Circuit: c.ID(), Episode: c.Episode, Kind: k, To: to,
				State: Pending, NextAttempt: now, CreatedAt: now})
		}
	}
	return out
}

func (s *Sender) deliver(ctx context.Context, f lease.Fence, m Message, circuits map[string]circuit.Circuit, apps map[string]circuit.App, now time.Time) error {
	if strings.HasPrefix(m.Circuit, JobPrefix) {
		if s.s.Jobs == nil {
			return nil
		}
		return s.send(ctx, f, m, func() (Mail, error) { return s.s.Jobs.ComposeJob(ctx, m) }, now)
	}
	c, ok := circuits[m.Circuit]
	if !ok || c.Episode != m.Episode {
		// The episode is over (or the circuit gone): an opening mail or a
		// reminder about it would be stale, and its link dead.
		m.State, m.LastError = Failed, "the episode ended before the mail could be sent"
		_, err := s.outbox.Update(ctx, f, m)
		return ignoreConflict(err)
	}
	return s.send(ctx, f, m, func() (Mail, error) { return s.composer.Compose(m, c, apps[c.AppID]) }, now)
}

// send claims a message, composes and sends it, and records the outcome.
func (s *Sender) send(ctx context.Context, f lease.Fence, m Message, compose func() (Mail, error), now time.Time) error {
	m.State, m.ClaimedAt, m.Attempts = Sending, now, m.Attempts+1
	claimed, err := s.outbox.Update(ctx, f, m)
	if err != nil {
		return ignoreConflict(err) // someone else has it
	}
	mail, err := compose()
	if err == nil {
		err = s.mailer.Send(ctx, mail)
	}
	switch {
	case err == nil:
		claimed.State, claimed.SentAt, claimed.LastError = Sent, s.s.Clock.Now(), ""
		s.s.Logger.Info("mail sent", "circuit", m.Circuit, "episode", m.Episode, "kind", m.Kind)
	case errors.Is(err, ErrPermanent) || claimed.Attempts >= s.s.MaxAttempts:
		claimed.State, claimed.LastError = Failed, err.Error()
		s.s.Logger.Warn("mail failed for good", "circuit", m.Circuit, "kind", m.Kind, "error", err)
	default:
		claimed.State, claimed.LastError = Pending, err.Error()
		claimed.NextAttempt = s.s.Clock.Now().Add(s.backoff(claimed.Attempts))
		s.s.Logger.Warn("mail will be retried", "circuit", m.Circuit, "kind", m.Kind, "attempt", claimed.Attempts, "error", err)
	}
	// Record the outcome even if ctx is ending: the mail may be out.
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, uerr := s.outbox.Update(recordCtx, f, claimed); uerr != nil {
		return fmt.Errorf("alerts: record the outcome of %s: %w", m.ID, uerr)
	}
	return nil
}

// backoff is exponential with ±20% jitter, so retries of many messages
// after an outage do not arrive together.
func (s *Sender) backoff(attempt int) time.Duration {
	d := s.s.FirstBackoff << min(attempt-1, 20)
	d = min(d, s.s.MaxBackoff)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func ignoreConflict(err error) error {
	if errors.Is(err, circuit.ErrConflict) {
		return nil
	}
	return err
}
