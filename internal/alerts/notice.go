package alerts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Notice is an alert in words for a channel that is not mail: a title, a
// paragraph, the facts, and a link to the page where a person reviews
// (and may resume). The link never acts on GET.
type Notice struct {
	// Type names the event for machines: circuit.opened, circuit.reminder,
	// circuit.resumed, circuit.throttled, circuit.restored, circuit.held, circuit.flapping, job.missing,
	// job.failing, job.recovered or test.
	Type     string
	Title    string
	Text     string
	Facts    []Fact
	LinkURL  string
	LinkText string
	At       time.Time
	// Data is the event's fields for webhook receivers.
	Data map[string]any
	// Incident names what on-call services keep as one incident: a
	// circuit's incarnation (each trip while the last incident is
	// resolved opens a new one), a job, a queue. Empty: none is kept.
	Incident string
}

// Incident actions of a notice.
const (
	IncidentTrigger = "trigger"
	IncidentResolve = "resolve"
)

// IncidentAction says what a notice does to its incident: a circuit that
// closed again or a job that recovered resolves it, anything else opens
// it or adds to the open one.
func IncidentAction(n Notice) string {
	switch n.Type {
	case "circuit.resumed", "circuit.restored", "downstream.resumed", "job.recovered", "test.resolved":
		return IncidentResolve
	}
	return IncidentTrigger
}

// Fact is one labelled value of a notice.
type Fact struct{ Name, Value string }

// Poster delivers a notice to a Teams, Slack or webhook channel. id is
// the message's stable id: a receiver sees the same id on a retry.
type Poster interface {
	Post(ctx context.Context, ch Channel, id string, n Notice) error
}

// NoticeComposer writes notices, as Composer writes mail.
type NoticeComposer interface {
	Notice(m Message, c circuit.Circuit, app circuit.App) (Notice, error)
	JobNotice(ctx context.Context, m Message) (Notice, error)
}

// RetryAfterError is a receiver asking to be called again later (HTTP 429
// or 503 with Retry-After): the sender waits that long for the destination.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (the receiver asked to wait %s)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

func retryAfter(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.After > 0 {
		return ra.After, true
	}
	return 0, false
}

// TestNotice is what "send a test" posts to a channel.
func TestNotice(ch Channel, fuseboxURL string, at time.Time) Notice {
	return Notice{Type: "test", Title: "Fusebox test message", At: at, Incident: "fusebox/test/" + ch.ID,
		Text:    fmt.Sprintf("This is a test of the channel %q. Alerts about circuits and jobs that name it will arrive here like this.", ch.Name),
		Facts:   []Fact{{Name: "Channel", Value: ch.Name + " (" + ch.Kind + ")"}, {Name: "Sent", Value: at.UTC().Format("Mon 2 Jan 2006 15:04:05 MST")}},
		LinkURL: fuseboxURL, LinkText: "Open Fusebox", Data: map[string]any{"channel": ch.ID}}
}
