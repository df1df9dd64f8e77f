package alerts

import (
	"context"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/setaside"
)

// SetAsidePrefix marks outbox messages about an app's set-aside queue:
// "queue:<app>/<queue>".
const SetAsidePrefix = "queue:"

// Kinds of message about set-aside queues.
const (
	KindSetAsideAppeared = "setaside-appeared" // a poison or parking queue went from empty to holding work
	KindSetAsideGrew     = "setaside-grew"     // it grew past the app's limit within an hour
	// KindSetAsideExpiring: its oldest message expires within a day.
	KindSetAsideExpiring = "setaside-expiring"
)

// SetAsideSubject is the outbox subject of an app's set-aside queue.
func SetAsideSubject(appID, queue string) string { return SetAsidePrefix + appID + "/" + queue }

// SetAsideOf reads a subject SetAsideSubject wrote.
func SetAsideOf(subject string) (appID, queue string, ok bool) {
	rest, ok := strings.CutPrefix(subject, SetAsidePrefix)
	if !ok {
		return "", "", false
	}
	appID, queue, ok = strings.Cut(rest, "/")
	return appID, queue, ok && circuit.ValidAppID(appID) && setaside.ValidQueueName(queue)
}

// SetAsideWriter writes mail and channel notices about set-aside queues.
type SetAsideWriter interface {
	ComposeSetAside(ctx context.Context, m Message) (Mail, error)
	SetAsideNotice(ctx context.Context, m Message) (Notice, error)
}

// SetAsideDestinations says who is told about a set-aside queue: the
// destinations of the circuit of the function it belongs to; when it
// belongs to none, everyone told about any of the app's circuits, and the
// app's channels.
func SetAsideDestinations(app circuit.App, circuits []circuit.Circuit, function string) []string {
	var recipients, channels []string
	for _, c := range circuits {
		if c.AppID != app.ID || (function != "" && c.Function != function) {
			continue
		}
		recipients, channels = append(recipients, c.Recipients...), append(channels, c.Channels...)
	}
	return Destinations(recipients, channels, app.Channels)
}

// SetAsideMessages are the messages a change of a set-aside queue owes:
// one per destination, keyed by the queue's episode, so looking again
// never makes a second one.
func SetAsideMessages(appID, queue string, episode int64, change setaside.Change, dests []string, now time.Time) []Message {
	kind := KindSetAsideAppeared
	switch change {
	case setaside.Grew:
		kind = KindSetAsideGrew
	case setaside.Expiring:
		kind = KindSetAsideExpiring
	}
	return messages(SetAsideSubject(appID, queue), episode, []string{kind}, dests, now)
}
