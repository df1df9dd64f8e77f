package alerts

// Delivering due messages: each destination on its own goroutine, so a
// slow receiver holds up only its own messages.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/spoken"
)

// deliverAll sends due messages, one goroutine per destination (at most
// Parallel at once): a slow receiver holds up only its own messages.
func (s *Sender) deliverAll(ctx context.Context, f lease.Fence, due []Message, circuits map[string]circuit.Circuit,
	apps map[string]circuit.App, channels map[string]Channel, now time.Time) []error {
	byDest := map[string][]Message{}
	var keys []string
	for _, m := range due {
		k := healthKey(m.To, channels)
		if _, ok := byDest[k]; !ok {
			keys = append(keys, k)
		}
		byDest[k] = append(byDest[k], m)
	}
	sort.Strings(keys)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, s.s.Parallel)
	)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, m := range byDest[k] {
				if s.paused(k, now) {
					return // the destination is backing off: its messages wait
				}
				if err := s.deliver(ctx, f, m, k, circuits, apps, channels, now); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					if errors.Is(err, lease.ErrFenced) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// delivery is one message's content, ready for its destination.
type delivery struct {
	kind   string // of channel: mail for direct addresses
	send   func(ctx context.Context) error
	closed string // when not empty, the message cannot be sent: why
}

func (s *Sender) deliver(ctx context.Context, f lease.Fence, m Message, key string, circuits map[string]circuit.Circuit,
	apps map[string]circuit.App, channels map[string]Channel, now time.Time) error {
	d := s.prepare(ctx, m, circuits, apps, channels)
	if d.send == nil && d.closed == "" {
		return nil // mail is off, or channels are: the message waits
	}
	if d.closed != "" {
		m.State, m.LastError = Failed, d.closed
		_, err := s.outbox.Update(ctx, f, m)
		s.s.Observe(d.kind, OutcomeFailed)
		return ignoreConflict(err)
	}
	m.State, m.ClaimedAt, m.Attempts = Sending, now, m.Attempts+1
	claimed, err := s.outbox.Update(ctx, f, m)
	if err != nil {
		return ignoreConflict(err) // someone else has it
	}
	sendCtx, cancel := context.WithTimeout(ctx, s.s.SendTimeout)
	err = d.send(sendCtx)
	cancel()
	at := s.s.Clock.Now()
	switch {
	case err == nil:
		claimed.State, claimed.SentAt, claimed.LastError = Sent, at, ""
		s.healthy(key)
		s.s.Observe(d.kind, OutcomeSent)
		s.s.Logger.Info("alert sent", "subject", m.Circuit, "episode", m.Episode, "kind", m.Kind, "channel_kind", d.kind)
	case errors.Is(err, ErrPermanent):
		claimed.State, claimed.LastError = Failed, err.Error()
		s.failing(key, d.kind, channelName(m.To, channels), err, 0, at)
		s.s.Observe(d.kind, OutcomeFailed)
		s.s.Logger.Warn("alert refused for good", "subject", m.Circuit, "kind", m.Kind, "channel_kind", d.kind, "error", err)
	case at.Sub(claimed.CreatedAt) >= s.s.GiveUpAfter:
		claimed.State = Failed
		claimed.LastError = fmt.Sprintf("gave up after %s of failed tries: %v", spoken.Duration(s.s.GiveUpAfter), err)
		s.failing(key, d.kind, channelName(m.To, channels), err, 0, at)
		s.s.Observe(d.kind, OutcomeFailed)
	default:
		wait, _ := retryAfter(err)
		next := s.failing(key, d.kind, channelName(m.To, channels), err, wait, at)
		claimed.State, claimed.LastError, claimed.NextAttempt = Pending, err.Error(), next
		s.s.Observe(d.kind, OutcomeRetried)
		s.s.Logger.Warn("alert will be retried", "subject", m.Circuit, "kind", m.Kind, "channel_kind", d.kind, "attempt", claimed.Attempts, "error", err)
	}
	// Record the outcome even if ctx is ending: the alert may be out.
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, uerr := s.outbox.Update(recordCtx, f, claimed); uerr != nil {
		return fmt.Errorf("alerts: record the outcome of %s: %w", m.ID, uerr)
	}
	return nil
}

// prepare finds what a message says and how it goes.
func (s *Sender) prepare(ctx context.Context, m Message, circuits map[string]circuit.Circuit, apps map[string]circuit.App, channels map[string]Channel) delivery {
	var ch *Channel
	kind := ChannelMail
	if id, ok := ChannelOf(m.To); ok {
		c, ok := channels[id]
		if !ok {
			if s.s.Channels == nil {
				return delivery{kind: "unknown"}
			}
			return delivery{kind: "unknown", closed: fmt.Sprintf("the channel %q does not exist (deleted, or never made): name another one", id)}
		}
		ch, kind = &c, c.Kind
	}
	d := delivery{kind: kind}
	about := m.Subject().About
	isJob, isQueue, isDown := about == AboutJob, about == AboutSetAside, about == AboutDownstream
	var (
		c   circuit.Circuit
		app circuit.App
	)
	if !isJob && !isQueue && !isDown {
		var ok bool
		c, ok = circuits[m.Circuit]
		if !ok || (m.Kind != KindFlapping && m.Kind != KindPauseAhead && c.Episode != m.Episode) {
			// The episode is over (or the circuit gone): an opening alert
			// or a reminder about it would be stale, and its link dead.
			d.closed = "the episode ended before the alert could be sent"
			return d
		}
		if (m.Kind == KindEscalated || m.Kind == KindExpiringEscalated) && c.AckedEpisode == c.Episode {
			d.closed = "someone acknowledged the episode before the escalation was sent"
			return d
		}
		app = apps[c.AppID]
	}
	if kind == ChannelMail {
		if s.mailer == nil {
			return d
		}
		to := []string{m.To}
		if ch != nil {
			to = ch.Addresses
		}
		d.send = func(ctx context.Context) error {
			var mail Mail
			var err error
			switch {
			case isJob && s.s.Jobs == nil:
				return fmt.Errorf("%w: no one writes mail about jobs here", ErrPermanent)
			case isJob:
				mail, err = s.s.Jobs.ComposeJob(ctx, m)
			case isQueue && s.s.SetAside == nil:
				return fmt.Errorf("%w: no one writes mail about set-aside queues here", ErrPermanent)
			case isQueue:
				mail, err = s.s.SetAside.ComposeSetAside(ctx, m)
			case isDown && s.s.Downstreams == nil:
				return fmt.Errorf("%w: no one writes mail about downstreams here", ErrPermanent)
			case isDown:
				mail, err = s.s.Downstreams.ComposeDownstream(ctx, m)
			default:
				mail, err = s.composer.Compose(m, c, app)
			}
			if err != nil {
				return err
			}
			mail.To = to
			return s.mailer.Send(ctx, mail)
		}
		return d
	}
	if s.s.Poster == nil || s.s.Notices == nil {
		return d
	}
	d.send = func(ctx context.Context) error {
		var n Notice
		var err error
		switch {
		case isJob:
			n, err = s.s.Notices.JobNotice(ctx, m)
		case isQueue && s.s.SetAside == nil:
			return fmt.Errorf("%w: no one writes notices about set-aside queues here", ErrPermanent)
		case isQueue:
			n, err = s.s.SetAside.SetAsideNotice(ctx, m)
		case isDown && s.s.Downstreams == nil:
			return fmt.Errorf("%w: no one writes notices about downstreams here", ErrPermanent)
		case isDown:
			n, err = s.s.Downstreams.DownstreamNotice(ctx, m)
		default:
			n, err = s.s.Notices.Notice(m, c, app)
		}
		if err != nil {
			return err
		}
		return s.s.Poster.Post(ctx, *ch, m.ID, n)
	}
	return d
}

func channelName(to string, channels map[string]Channel) string {
	if id, ok := ChannelOf(to); ok {
		if ch, ok := channels[id]; ok && ch.Kind != ChannelMail {
			return ch.Name
		}
	}
	return "mail (SMTP)"
}
