package circuit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/spoken"
)

// Auditor records who did what.
type Auditor interface {
	Append(ctx context.Context, e audit.Entry) error
}

// Service carries out what people do to circuits: trip, resume, settle
// drift. It only changes the circuit's desired state; the evaluator, which
// is the only one to call trigger switches, applies it within a tick.
type Service struct {
	store Stores
	audit Auditor
	now   func() time.Time
	ServiceSettings
}

// ServiceSettings are the service's optional parts.
type ServiceSettings struct {
	// TraceOf, if set, gives the traceparent of the request acting, which
	// the flip log keeps.
	TraceOf func(context.Context) string
	// Functions, if set, refuses circuits for functions a switch could
	// not stop: not in the app, or disabled by other means.
	Functions FunctionChecker
	// Channels, if set, refuses circuits that name channels that do not
	// exist (alerts.KnownChannels).
	Channels ChannelChecker
	// Acts, if set, says whether the one creating a circuit (named by
	// ctx) operates the app: another team's app is refused as unknown.
	Acts func(ctx context.Context, app App) bool
	// RefuseExpiring refuses pause windows as long as the hub keeps
	// events (or longer); without it they are kept, and the page and a
	// notice before each opening warn (FUSEBOX_PAUSE_EXPIRY).
	RefuseExpiring bool
	// Changed, if set, is told after each transition the service stored
	// (the evaluator's TickNow): the switch applies it at once rather
	// than at the next tick.
	Changed func()
}

// ChannelChecker refuses channel ids that name no channel, with a
// ValidationError for the channels field.
type ChannelChecker interface {
	Check(ctx context.Context, ids []string) error
}

// checkChannels refuses channel ids that name no channel, for Create and
// Update.
func (s *Service) checkChannels(ctx context.Context, ids []string) error {
	if s.Channels == nil {
		return nil
	}
	return s.Channels.Check(ctx, ids)
}

// checkEscalation refuses escalation channel ids that name no channel.
func (s *Service) checkPauses(set Settings) error {
	if !s.RefuseExpiring {
		return nil
	}
	if p, ok := ExpiringPause(set); ok {
		return ValidationError{{Field: "pause_windows", Message: fmt.Sprintf("%s is as long as the hub keeps events (%s) or longer: the events waiting when it opens would be gone before it ends (pauses that would lose events are refused here)", p, spoken.Duration(set.HubRetention))}}
	}
	return nil
}

func (s *Service) checkEscalation(ctx context.Context, e Escalation) error {
	return CheckEscalationChannels(ctx, s.checkChannels, e)
}

// FunctionChecker says why a function of an app cannot be guarded by its
// trigger setting, or nil when it can (or nobody can tell).
type FunctionChecker interface {
	CheckFunction(ctx context.Context, app App, function string) error
}

// NewService builds the service; now is the clock.
func NewService(store Stores, a Auditor, now func() time.Time, s ServiceSettings) *Service {
	return &Service{store: store, audit: a, now: now, ServiceSettings: s}
}

// Counts returns the current counts of every given circuit, reading the
// failures of the longest window once.
func (s *Service) Counts(ctx context.Context, circuits []Circuit) (map[string]Counts, error) {
	rows, now, err := s.window(ctx, circuits)
	if err != nil {
		return nil, err
	}
	return CountRows(rows, circuits, now), nil
}

// Failing returns the counts of those of circuits that have failure rows in
// the longest window; the others have nothing to count and are left out.
// The overview asks it of every circuit: at 10,000 circuits it counts the
// few that failed, not all of them.
func (s *Service) Failing(ctx context.Context, circuits []Circuit) (map[string]Counts, error) {
	rows, now, err := s.window(ctx, circuits)
	if err != nil {
		return nil, err
	}
	reported := map[string]map[string]bool{} // by app, then function: no ID built per circuit
	for _, r := range rows {
		app, function, _ := strings.Cut(r.Circuit, "/")
		if reported[app] == nil {
			reported[app] = map[string]bool{}
		}
		reported[app][function] = true
	}
	var subset []Circuit
	for _, c := range circuits {
		if reported[c.AppID][c.Function] {
			subset = append(subset, c)
		}
	}
	return CountRows(rows, subset, now), nil
}

// window reads the failure rows of the longest window of circuits, each
// once.
func (s *Service) window(ctx context.Context, circuits []Circuit) ([]FailureRow, time.Time, error) {
	now := s.now()
	longest := time.Duration(0)
	for _, c := range circuits {
		longest = max(longest, c.Window)
	}
	if longest == 0 {
		return nil, now, nil
	}
	rows, _, err := s.store.Failures.Window(ctx, now.Add(-longest).Truncate(time.Second), now)
	if err != nil {
		return nil, now, err
	}
	return rows, now, nil
}

// ApplyThrottle is an operator applying the throttle a circuit asked
// about, from its page.
func (s *Service) ApplyThrottle(ctx context.Context, appID, function, actor string) (Circuit, error) {
	return s.act(ctx, appID, function, actor, "throttled", func(c Circuit, n Counts, now time.Time) (Circuit, Flip, error) {
		return ApplyThrottle(c, actor, n, now)
	})
}

// Create makes a closed circuit for a function of a registered app.
func (s *Service) Create(ctx context.Context, appID, function string, set Settings, actor string) (Circuit, error) {
	c := Circuit{AppID: appID, Function: function, Settings: set, State: Closed, ChangedAt: s.now(), Reason: "created by " + actor}
	app, err := s.appOf(ctx, appID)
	if err != nil {
		return c, err
	}
	if app != nil && s.Acts != nil && !s.Acts(ctx, *app) {
		app = nil // another team's app reads as one that does not exist
	}
	if err := c.Validate(app); err != nil {
		return c, err
	}
	if err := s.checkChannels(ctx, c.Channels); err != nil {
		return c, err
	}
	if err := s.checkEscalation(ctx, c.Escalate); err != nil {
		return c, err
	}
	if err := s.checkPauses(c.Settings); err != nil {
		return c, err
	}
	if s.Functions != nil && app != nil {
		if err := s.Functions.CheckFunction(ctx, *app, function); err != nil {
			return c, ValidationError{{Field: "function", Message: err.Error()}}
		}
	}
	if err := s.store.Circuits.Create(ctx, c); err != nil {
		if isConflict(err) {
			return c, ErrExists
		}
		return c, err
	}
	return c, s.audit.Append(ctx, audit.Entry{At: s.now(), Actor: actor, Action: "created circuit", Target: c.ID(), Detail: describe(c)})
}

// Update changes a circuit's settings; its state stays as it is.
func (s *Service) Update(ctx context.Context, appID, function string, set Settings, actor string) (Circuit, error) {
	for range 3 {
		cur, err := s.store.Circuits.Get(ctx, appID, function)
		if err != nil {
			return Circuit{}, err
		}
		app, err := s.appOf(ctx, appID)
		if err != nil {
			return cur, err
		}
		next := cur
		next.Settings = set
		if err := next.Validate(app); err != nil {
			return next, err
		}
		if err := s.checkChannels(ctx, next.Channels); err != nil {
			return next, err
		}
		if err := s.checkPauses(next.Settings); err != nil {
			return Circuit{}, err
		}
		if err := s.checkEscalation(ctx, next.Escalate); err != nil {
			return next, err
		}
		// Arming a circuit in shadow makes its trigger follow its state
		// now: the evaluator applies the current episode again.
		arming := cur.Shadow && !next.Shadow
		err = s.store.Circuits.UpdateSettings(ctx, next)
		if isConflict(err) {
			continue
		}
		if err != nil {
			return Circuit{}, err
		}
		action := "changed circuit"
		switch {
		case arming:
			action = "armed circuit"
			if err := s.store.Circuits.Reapply(ctx, next); err != nil {
				return next, err
			}
		case !cur.Shadow && next.Shadow:
			action = "disarmed circuit"
		}
		return next, s.audit.Append(ctx, audit.Entry{At: s.now(), Actor: actor, Action: action, Target: next.ID(), Detail: describe(next)})
	}
	return Circuit{}, ErrConflictRetries
}

// Delete removes a closed circuit and its flip log. A circuit whose
// trigger the switch cannot set (the app is gone, Fusebox lacks the role)
// can be deleted in any state: nothing Fusebox does would change it, and
// the audit entry says where the trigger was left.
func (s *Service) Delete(ctx context.Context, appID, function, actor string) error {
	c, err := s.store.Circuits.Get(ctx, appID, function)
	if err != nil {
		return err
	}
	switch {
	case c.Stuck():
	case c.State != Closed:
		return ErrStillOpen
	case c.Pending():
		return ErrSwitching
	}
	if err := s.store.Circuits.Delete(ctx, appID, function, c.Version); err != nil {
		if isConflict(err) {
			return ErrConflictRetries
		}
		return err
	}
	detail := describe(c)
	if c.Stuck() {
		detail += fmt.Sprintf("; deleted while its trigger could not be switched %s (%s): check the app's settings by hand", onOff(!c.State.TriggerOff()), c.ApplyError)
	}
	return s.audit.Append(ctx, audit.Entry{At: s.now(), Actor: actor, Action: "deleted circuit", Target: c.ID(), Detail: detail})
}

func (s *Service) appOf(ctx context.Context, appID string) (*App, error) {
	app, err := s.store.Apps.Get(ctx, appID)
	if err != nil {
		if isNotFound(err) {
			return nil, nil // Validate reports the unknown app by field
		}
		return nil, err
	}
	return &app, nil
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func describe(c Circuit) string {
	d := "trips when " + c.RuleText()
	if c.Policy.AutoResume {
		d += fmt.Sprintf("; tries again after %s", spoken.Duration(c.Policy.Cooldown))
	}
	if len(c.Recipients) > 0 {
		d += "; mails " + strings.Join(c.Recipients, ", ")
	}
	if len(c.Channels) > 0 {
		d += "; alerts channels " + strings.Join(c.Channels, ", ")
	}
	if c.Shadow {
		d += "; shadow mode: never switches the trigger"
	}
	return d
}

// Acknowledge records that actor is on the current episode of an open
// circuit: its reminders stop. The trigger stays off.
func (s *Service) Acknowledge(ctx context.Context, appID, function, actor string) (Circuit, error) {
	for range 3 {
		c, err := s.store.Circuits.Get(ctx, appID, function)
		if err != nil {
			return Circuit{}, err
		}
		if !c.State.TriggerOff() {
			return c, ErrNothingToAcknowledge
		}
		if c.AckedEpisode == c.Episode {
			return c, nil
		}
		c.AckedEpisode, c.AckedBy, c.AckedAt = c.Episode, actor, s.now()
		err = s.store.Circuits.Acknowledge(ctx, c)
		if isConflict(err) {
			continue
		}
		if err != nil {
			return Circuit{}, err
		}
		return c, s.audit.Append(ctx, audit.Entry{At: c.AckedAt, Actor: actor, Action: "acknowledged", Target: c.ID(),
			Detail: fmt.Sprintf("episode %d: reminders stop; the trigger stays off", c.Episode)})
	}
	return Circuit{}, ErrConflictRetries
}

// Adopt accepts a trigger someone moved by hand: the circuit follows it.
func (s *Service) Adopt(ctx context.Context, appID, function, actor string) (Circuit, error) {
	return s.act(ctx, appID, function, actor, "adopted drift", func(c Circuit, n Counts, now time.Time) (Circuit, Flip, error) {
		switch {
		case c.Drift == "":
			return c, Flip{}, ErrNoDrift
		case c.State.TriggerOff():
			return Resume(c, actor, "adopted: the trigger was switched back on outside Fusebox", n, now)
		default:
			return Trip(c, actor, "adopted: the trigger was switched off outside Fusebox", n, now)
		}
	})
}

// Override puts the trigger back where the circuit wants it.
func (s *Service) Override(ctx context.Context, appID, function, actor string) error {
	c, err := s.store.Circuits.Get(ctx, appID, function)
	if err != nil {
		return err
	}
	if c.Drift == "" {
		return ErrNoDrift
	}
	if err := s.store.Circuits.Reapply(ctx, c); err != nil {
		return err
	}
	return s.audit.Append(ctx, audit.Entry{At: s.now(), Actor: actor, Action: "overrode drift", Target: c.ID(),
		Detail: fmt.Sprintf("trigger set %s again to match the %s circuit", onOff(!c.State.TriggerOff()), c.State)})
}

func (s *Service) act(ctx context.Context, appID, function, actor, verb string, change func(Circuit, Counts, time.Time) (Circuit, Flip, error)) (Circuit, error) {
	for range 3 {
		c, err := s.store.Circuits.Get(ctx, appID, function)
		if err != nil {
			return Circuit{}, err
		}
		counts, err := s.Counts(ctx, []Circuit{c})
		if err != nil {
			return Circuit{}, err
		}
		next, fl, err := change(c, counts[c.ID()], s.now())
		if err != nil {
			return c, err
		}
		fl.TraceParent = "" // a person's action, not the failures' trace
		if s.TraceOf != nil {
			fl.TraceParent = s.TraceOf(ctx)
		}
		err = s.store.Circuits.Transition(ctx, lease.Fence{}, next, fl)
		if isConflict(err) {
			continue
		}
		if err != nil {
			return Circuit{}, err
		}
		if s.Changed != nil {
			s.Changed()
		}
		if err := s.audit.Append(ctx, audit.Entry{At: fl.At, Actor: actor, Action: verb, Target: c.ID(),
			Detail: fmt.Sprintf("%s → %s, episode %d: %s", fl.From, fl.To, fl.Episode, fl.Reason)}); err != nil {
			return next, err
		}
		return next, nil
	}
	return Circuit{}, ErrConflictRetries
}

func isConflict(err error) bool { return errors.Is(err, ErrConflict) }
