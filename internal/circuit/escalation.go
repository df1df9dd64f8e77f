package circuit

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
)

// Escalation is who else is told when an open circuit's episode is not
// acknowledged in time: a second list, told once per episode.
type Escalation struct {
	// After is how long the episode may stay unacknowledged; 0: never
	// escalate.
	After time.Duration
	// To lists mail addresses and channel ids (an entry with an @ is an
	// address).
	To []string
}

// Limits of an escalation.
const (
	MaxEscalateAfter = 7 * 24 * time.Hour
	MaxEscalateTo    = 20
)

// On says whether the escalation is set.
func (e Escalation) On() bool { return e.After > 0 && len(e.To) > 0 }

// Split parts the list into mail addresses and channel ids.
func (e Escalation) Split() (addresses, channels []string) {
	for _, to := range e.To {
		if strings.Contains(to, "@") {
			addresses = append(addresses, to)
		} else {
			channels = append(channels, to)
		}
	}
	return addresses, channels
}

// EscalationOf is c's escalation: its own when it sets one, else its
// app's.
func (c Circuit) EscalationOf(app App) Escalation {
	if c.Escalate.On() {
		return c.Escalate
	}
	return app.Escalate
}

// EscalationDue says whether an open episode of c, unacknowledged, is owed
// its escalation at now. A trip by hand is someone's deliberate act: it
// escalates to nobody.
func (c Circuit) EscalationDue(now time.Time) bool {
	return c.Escalate.On() && c.State == Open && !c.Shadow && c.Episode > 0 &&
		c.AckedEpisode != c.Episode && !now.Before(c.ChangedAt.Add(c.Escalate.After))
}

// validate adds the escalation's problems to v.
func (e Escalation) validate(add func(field, format string, args ...any)) {
	switch {
	case e.After < 0 || (e.After > 0 && e.After < time.Second):
		add("escalate_after", "must be at least 1s, or 0 for no escalation")
	case e.After > MaxEscalateAfter:
		add("escalate_after", "must be at most %s", spoken.Duration(MaxEscalateAfter))
	case e.After%time.Second != 0:
		add("escalate_after", "must be whole seconds")
	case e.After > 0 && len(e.To) == 0:
		add("escalate_to", "must name someone to tell when escalation is on: mail addresses or channel ids")
	case e.After == 0 && len(e.To) > 0:
		add("escalate_after", "must say how long an open episode may go unacknowledged before %s is told, such as 30m", strings.Join(e.To, ", "))
	}
	if len(e.To) > MaxEscalateTo {
		add("escalate_to", "may name at most %d addresses and channels", MaxEscalateTo)
		return
	}
	for _, to := range e.To {
		if strings.Contains(to, "@") {
			if a, err := mail.ParseAddress(to); err != nil || a.Address != to {
				add("escalate_to", "%q is not an e-mail address", to)
				return
			}
		} else if !ValidAppID(to) {
			add("escalate_to", "%q is neither an e-mail address nor a channel id", to)
			return
		}
	}
}

// CheckEscalationChannels asks check (a channel registry's Check) whether
// e's channel ids name channels, and says its problems of escalate_to.
func CheckEscalationChannels(ctx context.Context, check func(context.Context, []string) error, e Escalation) error {
	_, channels := e.Split()
	err := check(ctx, channels)
	var v ValidationError
	if errors.As(err, &v) {
		for i := range v {
			v[i].Field = "escalate_to"
		}
		return v
	}
	return err
}
