package circuit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// What a signed link in a notice may do: resume, or throttle, exactly the
// episode it was sent for, for a recipient of that episode.

// LinkClaim is what a signed resume link names: exactly one episode of one
// incarnation of a circuit, and the recipient it was sent to.
type LinkClaim struct {
	AppID, Function string
	Episode         int64
	Incarnation     string
	Recipient       string
}

// IsLinkRefusal reports whether err is one of the reasons a link does not act.
func IsLinkRefusal(err error) bool {
	for _, e := range errLinkCheckTypes {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// CheckLink says whether a link may resume c, of app, as it stands, or
// why not.
func CheckLink(c Circuit, app App, l LinkClaim) error {
	switch {
	case c.Incarnation != l.Incarnation:
		return ErrRecreated
	case c.Episode != l.Episode:
		return ErrEpisodeEnded
	case c.State == ForcedOpen:
		return ErrForcedByHand
	case c.State != Open:
		return ErrNotLinkAction
	case !hasRecipient(c, app, l.Recipient):
		return ErrNotRecipient
	}
	return nil
}

// channelPrefix is how a link made out to a channel names it (see
// alerts.ChannelPrefix).
const channelPrefix = "channel:"

func hasRecipient(c Circuit, app App, to string) bool {
	if id, ok := strings.CutPrefix(to, channelPrefix); ok {
		channels := c.Channels
		if len(channels) == 0 {
			channels = app.Channels
		}
		_, escalation := c.EscalationOf(app).Split()
		for _, ch := range slices.Concat(channels, escalation) {
			if ch == id {
				return true
			}
		}
		return false
	}
	for _, r := range c.Recipients {
		if strings.EqualFold(r, to) {
			return true
		}
	}
	// Whoever the episode was escalated to may act on it as well.
	addresses, _ := c.EscalationOf(app).Split()
	for _, r := range addresses {
		if strings.EqualFold(r, to) {
			return true
		}
	}
	return false
}

// ResumeByLink resumes the circuit a link names, only if the link still
// names it: the check is made on the very version of the circuit that the
// conditional write replaces, so a retry after a lost race checks again
// and can never resume a later episode.
func (s *Service) ResumeByLink(ctx context.Context, l LinkClaim, actor, reason string) (Circuit, error) {
	app, err := s.store.Apps.Get(ctx, l.AppID)
	if err != nil {
		return Circuit{}, err
	}
	return s.act(ctx, l.AppID, l.Function, actor, "resumed", func(c Circuit, n Counts, now time.Time) (Circuit, Flip, error) {
		if err := CheckLink(c, app, l); err != nil {
			return c, Flip{}, err
		}
		return Resume(c, actor, reason, n, now)
	})
}

// CheckThrottleLink says whether an Apply link still acts: the circuit
// and episode it was sent for, still asking, and a recipient of its
// alerts.
func CheckThrottleLink(c Circuit, app App, l LinkClaim) error {
	switch {
	case c.Incarnation != l.Incarnation:
		return ErrRecreated
	case c.Episode != l.Episode:
		return ErrEpisodeEnded
	case c.State != Closed || !c.Asked:
		return ErrNotLinkAction
	case !hasRecipient(c, app, l.Recipient):
		return ErrNotRecipient
	}
	return nil
}

// ThrottleByLink applies the throttle an Apply link was sent for, checked
// again inside the write.
func (s *Service) ThrottleByLink(ctx context.Context, l LinkClaim, actor string) (Circuit, error) {
	app, err := s.store.Apps.Get(ctx, l.AppID)
	if err != nil {
		return Circuit{}, err
	}
	return s.act(ctx, l.AppID, l.Function, actor, "throttled", func(c Circuit, n Counts, now time.Time) (Circuit, Flip, error) {
		if err := CheckThrottleLink(c, app, l); err != nil {
			return c, Flip{}, err
		}
		return ApplyThrottle(c, actor, n, now)
	})
}
