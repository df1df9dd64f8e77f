package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/words"
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
	KindOpened   = "opened"
	KindResumed  = "resumed"
	KindHeld     = "held"     // a trip the app's guardrail held
	KindFlapping = "flapping" // one summary an hour while a circuit flaps
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
	saved   string // the health last stored, to write only changes
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

// Policy is what decides which alerts a circuit's episode is owed.
type Policy struct {
	RemindEvery  time.Duration
	MaxReminders int
	Within       time.Duration // first alerts only for episodes younger than this
	FlapLimit    int           // changes in an hour before alerts become hourly summaries
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
		byID[c.ID()] = c
		dests := Destinations(c.Recipients, c.Channels, appByID[c.AppID].Channels)
		for _, m := range Owed(c, dests, now, s.policy()) {
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
func Owed(c circuit.Circuit, dests []string, now time.Time, p Policy) []Message {
	if c.Episode < 1 || len(dests) == 0 || now.Sub(c.ChangedAt) > p.Within+time.Duration(p.MaxReminders)*p.RemindEvery {
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
	case c.State == circuit.Closed && now.Sub(c.ChangedAt) <= p.Within:
		kinds = append(kinds, KindResumed)
	}
	return messages(c.ID(), c.Episode, kinds, dests, now)
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

func (s *Sender) paused(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.health[key]
	return h != nil && now.Before(h.NextTry)
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
		claimed.LastError = fmt.Sprintf("gave up after %s of failed tries: %v", words.Duration(s.s.GiveUpAfter), err)
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
	isJob := strings.HasPrefix(m.Circuit, JobPrefix)
	var (
		c   circuit.Circuit
		app circuit.App
	)
	if !isJob {
		var ok bool
		c, ok = circuits[m.Circuit]
		if !ok || (m.Kind != KindFlapping && c.Episode != m.Episode) {
			// The episode is over (or the circuit gone): an opening alert
			// or a reminder about it would be stale, and its link dead.
			d.closed = "the episode ended before the alert could be sent"
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
		if isJob {
			n, err = s.s.Notices.JobNotice(ctx, m)
		} else {
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
	s.mu.Lock()
	same := b.String() == s.saved
	s.mu.Unlock()
	if same {
		return nil
	}
	if err := s.s.Health.PutDelivery(ctx, failing); err != nil {
		return err
	}
	s.mu.Lock()
	s.saved = b.String()
	s.mu.Unlock()
	return nil
}

func ignoreConflict(err error) error {
	if errors.Is(err, circuit.ErrConflict) {
		return nil
	}
	return err
}
