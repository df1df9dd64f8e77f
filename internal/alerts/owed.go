package alerts

// Which alerts an episode is owed: the policy, decided from the circuit alone.

import (
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Policy is what decides which alerts a circuit's episode is owed.
type Policy struct {
	RemindEvery  time.Duration
	MaxReminders int
	Within       time.Duration // first alerts only for episodes younger than this
	FlapLimit    int           // changes in an hour before alerts become hourly summaries
}

// Destinations lists where a circuit's or job's alerts go: the addresses
// it names, and the channels it names — or, when it names none, its app's.
func Destinations(recipients, channels, appChannels []string) []string {
	if len(channels) == 0 {
		channels = appChannels
	}
	out := make([]string, 0, len(recipients)+len(channels))
	seen := map[string]bool{}
	for _, r := range recipients {
		if k := strings.ToLower(r); !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	for _, id := range channels {
		if d := ChannelPrefix + id; !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Owed lists the messages a circuit's current episode calls for: the
// opening alert and its reminders while it is open (reminders stop once
// someone acknowledged the episode), and a resumed alert once it closed
// again. A circuit that changed more than FlapLimit times in the last hour
// is owed one summary per hour instead. Messages are keyed, so listing
// them again changes nothing.
//
// A circuit whose episode a downstream started is owed nothing of its
// own: the downstream tells its members' destinations once (Downstream).
func Owed(c circuit.Circuit, dests []string, now time.Time, p Policy) []Message {
	if c.Episode < 1 || len(dests) == 0 || c.Downstream != "" || now.Sub(c.ChangedAt) > p.Within+time.Duration(p.MaxReminders)*p.RemindEvery {
		return nil
	}
	if p.FlapLimit > 0 && c.ChangesSince(now.Add(-time.Hour)) > p.FlapLimit {
		hour := now.Truncate(time.Hour).Unix()
		return messages(c.ID(), hour, []string{KindFlapping}, dests, now)
	}
	var kinds []string
	switch {
	case c.State.TriggerOff():
		if now.Sub(c.ChangedAt) <= p.Within {
			kinds = append(kinds, KindOpened)
		}
		for n := 1; n <= p.MaxReminders && c.AckedEpisode != c.Episode; n++ {
			if !now.Before(c.ChangedAt.Add(time.Duration(n) * p.RemindEvery)) {
				kinds = append(kinds, fmt.Sprintf("reminder-%d", n))
			}
		}
	case c.Held && now.Sub(c.ChangedAt) <= p.Within:
		kinds = append(kinds, KindHeld)
	case c.Asked && now.Sub(c.ChangedAt) <= p.Within:
		kinds = append(kinds, KindThrottleAsked)
	case c.State == circuit.Throttled && c.ThrottleSince > 0 && now.Sub(c.ChangedAt) <= p.Within:
		// Once per throttle, whatever its steps: keyed by the episode it
		// began with. A ramp after a resume is the resume's notice.
		kind := KindThrottled
		if c.Ramping {
			kind = KindResumed
		}
		return messages(c.ID(), c.ThrottleSince, []string{kind}, dests, now)
	case c.State == circuit.Closed && c.ThrottleSince > 0 && c.Ramping:
		// The end of a ramp after a resume: the resume was told.
	case c.State == circuit.Closed && c.ThrottleSince > 0 && now.Sub(c.ChangedAt) <= p.Within:
		kinds = append(kinds, KindRestored)
	case c.State == circuit.Closed && now.Sub(c.ChangedAt) <= p.Within:
		kinds = append(kinds, KindResumed)
	}
	return messages(c.ID(), c.Episode, kinds, dests, now)
}

// Escalations lists the escalation an open, unacknowledged episode is
// owed: one message to each of the circuit's escalation list, once the
// episode has gone unacknowledged for Escalate.After, and no later than
// the policy still mails first alerts after that (an episode older than
// that when escalation was set up is not escalated out of the blue).
func Escalations(c circuit.Circuit, now time.Time, p Policy) []Message {
	if !c.EscalationDue(now) || now.Sub(c.ChangedAt) > c.Escalate.After+p.Within {
		return nil
	}
	addresses, channels := c.Escalate.Split()
	return messages(c.ID(), c.Episode, []string{KindEscalated}, Destinations(addresses, channels, nil), now)
}

// Resolutions lists the resumed notices a closed circuit owes the
// on-call services of its escalation list (onCall says which channel ids
// are such): an incident an escalation may have opened there is resolved
// with the others. Resolving one that was never opened changes nothing
// there; mail and chat on the list hear only of escalations.
func Resolutions(c circuit.Circuit, onCall func(channelID string) bool, now time.Time, p Policy) []Message {
	if c.State != circuit.Closed || c.Held || c.Episode < 2 || !c.Escalate.On() || now.Sub(c.ChangedAt) > p.Within {
		return nil
	}
	_, channels := c.Escalate.Split()
	var dests []string
	for _, id := range channels {
		if onCall(id) {
			dests = append(dests, ChannelPrefix+id)
		}
	}
	return messages(c.ID(), c.Episode, []string{KindResumed}, dests, now)
}

func messages(subject string, episode int64, kinds, dests []string, now time.Time) []Message {
	var out []Message
	for _, k := range kinds {
		for _, to := range dests {
			out = append(out, Message{ID: MessageID(subject, episode, k, to), Circuit: subject, Episode: episode, Kind: k, To: to,
				State: Pending, NextAttempt: now, CreatedAt: now})
		}
	}
	return out
}

// KindPauseAhead warns, an hour before a pause window opens, that the
// events waiting when it opens would expire before it ends (the window is
// as long as the hub keeps them, or longer). Its episode is the opening's
// Unix second: one warning per opening.
const KindPauseAhead = "pause-ahead"

// PauseAhead is the warning a circuit's next pause window owes, within
// the hour before it opens.
func PauseAhead(c circuit.Circuit, dests []string, now time.Time) []Message {
	p, start, _, ok := circuit.NextPause(c, now)
	if !ok || start.Sub(now) > time.Hour || c.HubRetention == 0 || p.Duration < c.HubRetention || c.Shadow {
		return nil
	}
	return messages(c.ID(), start.Unix(), []string{KindPauseAhead}, dests, now)
}
