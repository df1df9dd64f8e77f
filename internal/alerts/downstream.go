package alerts

import (
	"context"
	"strings"
	"time"
)

// DownstreamPrefix marks outbox messages about a downstream's episode:
// "downstream:<name>". One goes to each destination of its members (and
// its own), listing them, instead of one per member.
const DownstreamPrefix = "downstream:"

// Kinds of message about downstreams.
const (
	KindDownstreamOpened  = "downstream-opened"
	KindDownstreamResumed = "downstream-resumed"
	// KindDownstreamThrottled: an alert's throttle: rule lowered its
	// members' concurrency together; keyed by the moment it did.
	KindDownstreamThrottled = "downstream-throttled"
)

// DownstreamSubject is the outbox subject of a downstream.
func DownstreamSubject(name string) string { return DownstreamPrefix + name }

// DownstreamWriter writes mail and channel notices about downstreams.
type DownstreamWriter interface {
	ComposeDownstream(ctx context.Context, m Message) (Mail, error)
	DownstreamNotice(ctx context.Context, m Message) (Notice, error)
}

// DownstreamMessages are the messages a downstream's episode owes: an
// opened one to every destination when its members went off, a resumed
// one when they all closed again; keyed by its episode, so asking again
// makes none twice. open says its members are off; changed is when it
// last changed.
func DownstreamMessages(name string, episode int64, open bool, changed time.Time, dests []string, now time.Time, within time.Duration) []Message {
	if episode < 1 || now.Sub(changed) > within {
		return nil
	}
	kind := KindDownstreamResumed
	if open {
		kind = KindDownstreamOpened
	}
	return messages(DownstreamSubject(name), episode, []string{kind}, dests, now)
}

// DownstreamDestinations is where a downstream's notices go: its own
// recipients and channels, and every destination of its members' circuits
// (each member's, or its app's channels), each once.
func DownstreamDestinations(recipients, channels []string, members [][]string) []string {
	out := Destinations(recipients, channels, nil)
	seen := map[string]bool{}
	for _, d := range out {
		seen[strings.ToLower(d)] = true
	}
	for _, dests := range members {
		for _, d := range dests {
			if k := strings.ToLower(d); !seen[k] {
				seen[k] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// DownstreamPauseAhead warns each destination, an hour before the
// downstream's pause window opens at start, that a member's waiting events
// would expire before it ends; keyed by the opening.
func DownstreamPauseAhead(name string, start time.Time, dests []string, now time.Time) []Message {
	return messages(DownstreamSubject(name), start.Unix(), []string{KindPauseAhead}, dests, now)
}

// DownstreamThrottled tells each destination once that the downstream's
// members were throttled together at at.
func DownstreamThrottled(name string, at time.Time, dests []string, now time.Time) []Message {
	return messages(DownstreamSubject(name), at.Unix(), []string{KindDownstreamThrottled}, dests, now)
}
