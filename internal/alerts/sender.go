package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

// Outcomes a sender reports to SenderSettings.Observe.
const (
	OutcomeSent    = "sent"
	OutcomeFailed  = "failed"
	OutcomeRetried = "retried"
)

// SenderSettings tune the sender. Zero values take the defaults.
type SenderSettings struct {
	ClaimTTL       time.Duration // a claim older than this is retried; default 5m
	FirstBackoff   time.Duration // after a destination's first failure; default 10s, doubling with jitter...
	MaxBackoff     time.Duration // ...up to 10m
	GiveUpAfter    time.Duration // a message still unsent this long after it was queued fails; default 72h
	RemindEvery    time.Duration // while open; default 4h
	MaxReminders   int           // default 3
	MailableWithin time.Duration // episodes older than this get no first alert; default 24h
	// FlapLimit is how many changes in an hour a circuit may make before
	// its alerts become one summary an hour; default 6.
	FlapLimit int
	// Parallel bounds how many destinations are delivered to at once;
	// default 8. Messages to one destination go one after another.
	Parallel int
	// SendTimeout bounds one delivery; default 30s (the HTTP posters
	// have their own, shorter, limit).
	SendTimeout time.Duration
	Clock       clock.Clock
	Logger      *slog.Logger
	// Jobs writes mail about jobs; nil leaves such mail undelivered.
	Jobs JobMailer
	// SetAside writes mail and notices about set-aside queues; nil fails
	// them.
	SetAside SetAsideWriter
	// Downstreams writes mail and notices about downstreams; nil fails
	// them for good.
	Downstreams DownstreamWriter
	// Channels, Poster and Notices deliver to channels; with any of them
	// nil only direct mail addresses and mail channels are served.
	Channels Channels
	Poster   Poster
	Notices  NoticeComposer
	// Health records failing destinations; nil keeps them in memory.
	Health HealthStore
	// Observe is told each delivery's outcome, by channel kind.
	Observe func(kind, outcome string)
}

// Sender sweeps circuits for owed alerts and delivers the outbox. Run it
// under a lease; its claims are fenced.
type Sender struct {
	outbox   Outbox
	circuits Circuits
	mailer   Mailer // nil: mail is off, and mail stays queued
	composer Composer
	s        SenderSettings

	mu      sync.Mutex
	ensured map[string]time.Time // message ids known to be in the outbox, by when
	health  map[string]*Health
	saved   string    // the health last stored, to write only changes...
	savedAt time.Time // ...or once a minute, so readers know this instance still sends
}

// NewSender fills defaults. mailer may be nil when mail is off.
func NewSender(o Outbox, c Circuits, m Mailer, comp Composer, s SenderSettings) *Sender {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&s.ClaimTTL, 5*time.Minute)
	def(&s.FirstBackoff, 10*time.Second)
	def(&s.MaxBackoff, 10*time.Minute)
	def(&s.GiveUpAfter, 72*time.Hour)
	def(&s.RemindEvery, 4*time.Hour)
	def(&s.MailableWithin, 24*time.Hour)
	def(&s.SendTimeout, 30*time.Second)
	if s.MaxReminders < 0 {
		s.MaxReminders = 0
	} else if s.MaxReminders == 0 {
		s.MaxReminders = 3
	}
	if s.FlapLimit <= 0 {
		s.FlapLimit = 6
	}
	if s.Parallel <= 0 {
		s.Parallel = 8
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Observe == nil {
		s.Observe = func(string, string) {}
	}
	return &Sender{outbox: o, circuits: c, mailer: m, composer: comp, s: s,
		ensured: map[string]time.Time{}, health: map[string]*Health{}}
}

func (s *Sender) policy() Policy {
	return Policy{RemindEvery: s.s.RemindEvery, MaxReminders: s.s.MaxReminders, Within: s.s.MailableWithin, FlapLimit: s.s.FlapLimit}
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
	channels := map[string]Channel{}
	if s.s.Channels != nil {
		list, err := s.s.Channels.ListChannels(ctx)
		if err != nil {
			return err
		}
		for _, ch := range list {
			channels[ch.ID] = ch
		}
	}
	var errs []error
	appByID := map[string]circuit.App{}
	for _, a := range apps {
		appByID[a.ID] = a
	}
	byID := map[string]circuit.Circuit{}
	for _, c := range cs {
		// An escalation the circuit does not set is its app's.
		c.Escalate = c.EscalationOf(appByID[c.AppID])
		byID[c.ID()] = c
		dests := Destinations(c.Recipients, c.Channels, appByID[c.AppID].Channels)
		onCall := func(id string) bool { return OnCall(channels[id].Kind) }
		for _, m := range slices.Concat(Owed(c, dests, now, s.policy()), Escalations(c, now, s.policy()), Resolutions(c, onCall, now, s.policy()), PauseAhead(c, dests, now)) {
			if err := s.ensure(ctx, m, now); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.forget(now)
	due, err := s.outbox.Due(ctx, now, now.Add(-s.s.ClaimTTL))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, s.deliverAll(ctx, f, due, byID, appByID, channels, now)...)
	if err := s.saveHealth(ctx); err != nil {
		errs = append(errs, err)
	}
	for _, err := range errs {
		if errors.Is(err, lease.ErrFenced) {
			return err
		}
	}
	return errors.Join(errs...)
}

// ensure inserts a message once per holder: the outbox refuses a second
// insert anyway, but asking again every pass for every owed message would
// be a storm of refused writes for as long as an episode lasts.
func (s *Sender) ensure(ctx context.Context, m Message, now time.Time) error {
	s.mu.Lock()
	_, known := s.ensured[m.ID]
	s.mu.Unlock()
	if known {
		return nil
	}
	if err := s.outbox.Ensure(ctx, m); err != nil {
		return err
	}
	s.mu.Lock()
	s.ensured[m.ID] = now
	s.mu.Unlock()
	return nil
}

// forget drops ids no episode can owe any more.
func (s *Sender) forget(now time.Time) {
	horizon := now.Add(-s.s.MailableWithin - time.Duration(s.s.MaxReminders+1)*s.s.RemindEvery)
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, at := range s.ensured {
		if at.Before(horizon) {
			delete(s.ensured, id)
		}
	}
}

// Failing returns the destinations failing now, by name.
func (s *Sender) Failing() []Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Health, 0, len(s.health))
	for _, h := range s.health {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Destination < out[j].Destination })
	return out
}

func (s *Sender) saveHealth(ctx context.Context) error {
	if s.s.Health == nil {
		return nil
	}
	failing := s.Failing()
	var b strings.Builder
	for _, h := range failing {
		fmt.Fprintf(&b, "%s|%s|%d\n", h.Destination, h.LastError, h.FailingSince.Unix())
	}
	now := s.s.Clock.Now()
	s.mu.Lock()
	same := b.String() == s.saved && now.Sub(s.savedAt) < time.Minute
	s.mu.Unlock()
	if same {
		return nil
	}
	if err := s.s.Health.PutDelivery(ctx, failing); err != nil {
		return err
	}
	s.mu.Lock()
	s.saved, s.savedAt = b.String(), now
	s.mu.Unlock()
	return nil
}

func ignoreConflict(err error) error {
	if errors.Is(err, circuit.ErrConflict) {
		return nil
	}
	return err
}
