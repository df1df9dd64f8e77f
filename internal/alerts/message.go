package alerts

// The outbox's messages and what the sender needs to write and send them.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
)

// Message states.
const (
	Pending = "pending"
	Sending = "sending"
	Sent    = "sent"
	Failed  = "failed" // for good: the receiver refused this message, or it grew too old
)

// Kinds of message.
const (
	KindOpened  = "opened"
	KindResumed = "resumed"
	KindHeld    = "held" // a trip the app's guardrail held
	// KindThrottled is a throttle stage lowering a running function's
	// concurrency; KindRestored its ramp putting it back, unthrottled.
	KindThrottled = "throttled"
	KindRestored  = "restored"
	// KindThrottleAsked asks, with a signed Apply link, before a throttle
	// lowers anything (Throttle.Ask).
	KindThrottleAsked = "throttle-asked"
	KindFlapping      = "flapping" // one summary an hour while a circuit flaps
	// KindEscalated goes to the circuit's escalation list once an open
	// episode has gone unacknowledged for as long as it allows.
	KindEscalated = "escalated"
)

// Message is one alert to one destination about one episode of one
// circuit or job.
type Message struct {
	ID      string // derived: subject, episode, kind, destination
	Circuit string // app/function, or "job:<id>"
	// Episode is the circuit's episode; for jobs the Unix second of the
	// change, and for flapping summaries the start of the hour.
	Episode int64
	Kind    string // opened, reminder-N, resumed, held, flapping, job-…
	// To is the destination: a mail address, or "channel:<id>".
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

// MessageID is the outbox key of a message: the same subject, episode,
// kind and destination always give the same message.
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

// Circuits is what the sender reads to know which alerts are owed.
type Circuits interface {
	ListCircuits(ctx context.Context) ([]circuit.Circuit, error)
	ListApps(ctx context.Context) ([]circuit.App, error)
}

// Channels lists the channels alerts may go to.
type Channels interface {
	ListChannels(ctx context.Context) ([]Channel, error)
}

// Mail is one message ready for SMTP.
type Mail struct {
	To                             []string
	Subject, Text, HTML, MessageID string
}

// Mailer hands mail to an SMTP server. An error wrapping ErrPermanent will
// not succeed on retry.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}

// ErrPermanent marks a refusal that retrying will not change.
var ErrPermanent = errors.New("alerts: permanent failure")

// Composer turns a message about a circuit into mail.
type Composer interface {
	Compose(m Message, c circuit.Circuit, app circuit.App) (Mail, error)
}

// JobMailer writes mail about jobs (messages whose Circuit is "job:<id>").
type JobMailer interface {
	ComposeJob(ctx context.Context, m Message) (Mail, error)
}

// JobPrefix marks outbox messages about jobs rather than circuits.
const JobPrefix = "job:"
