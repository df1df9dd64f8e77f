package alerts

// How each destination fares: failing ones are paused with backoff and
// shown on the dashboard.

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Health is how deliveries to one destination fare: the SMTP server for
// every mail ("mail"), or one channel. Only failing destinations have one.
type Health struct {
	Destination  string // "mail" or "channel:<id>"
	Kind         string // mail, teams, slack, webhook
	Name         string
	FailingSince time.Time
	LastError    string
	Failures     int // in a row
	NextTry      time.Time
}

// HealthStore keeps the failing destinations for the dashboard, which may
// run on another instance than the sender.
type HealthStore interface {
	PutDelivery(ctx context.Context, failing []Health) error
}

// healthKey is the destination a message's delivery health is kept
// under: every mail shares the SMTP server.
func healthKey(to string, channels map[string]Channel) string {
	if id, ok := ChannelOf(to); ok {
		if ch, ok := channels[id]; !ok || ch.Kind != ChannelMail {
			return to
		}
	}
	return "mail"
}

func (s *Sender) paused(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.health[key]
	return h != nil && now.Before(h.NextTry)
}

// failing records a failed delivery to a destination and returns when it
// may be tried again: the receiver's Retry-After if it gave one, else a
// backoff that doubles with each failure in a row, with ±20 % jitter so
// many destinations recovering together do not all come back at once.
func (s *Sender) failing(key, kind, name string, err error, wait time.Duration, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.health[key]
	if h == nil {
		h = &Health{Destination: key, Kind: kind, Name: name, FailingSince: now}
		s.health[key] = h
	}
	h.Failures++
	h.LastError = err.Error()
	if errors.Is(err, ErrPermanent) {
		h.NextTry = now // the next message may fare better
		return now
	}
	if wait <= 0 {
		d := min(s.s.FirstBackoff<<min(h.Failures-1, 20), s.s.MaxBackoff)
		wait = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	}
	h.NextTry = now.Add(wait)
	return h.NextTry
}

func (s *Sender) healthy(key string) {
	s.mu.Lock()
	delete(s.health, key)
	s.mu.Unlock()
}
