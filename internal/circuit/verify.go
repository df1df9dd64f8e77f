package circuit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
)

// Confirmation is what the host itself reports about a trigger after a
// switch wrote its setting: the write restarts the app, and only the
// restarted host's view says the function really stopped.
type Confirmation string

const (
	// Unconfirmed: written, the host has not yet been seen to follow
	// (the app is restarting), or nobody looked yet.
	Unconfirmed Confirmation = ""
	// Confirmed: the host reports the function as the circuit wants it.
	Confirmed Confirmation = "confirmed"
	// Contradicted: past the deadline, the host still reports the other
	// position: a drift to act on.
	Contradicted Confirmation = "contradicted"
	// Unconfirmable: the app's switch cannot read the host's own view
	// (a local.settings.json).
	Unconfirmable Confirmation = "unconfirmable"
)

// ConfirmationOf is the confirmation of the applied episode; Unconfirmed
// when the one recorded is about an earlier episode or application.
func (c Circuit) ConfirmationOf() Confirmation {
	if c.Pending() || c.ConfirmedEpisode != c.Episode || c.ConfirmedAt.Before(c.AppliedAt) {
		return Unconfirmed
	}
	return c.Confirmation
}

// TriggerStatus says in words where the trigger stands, for the circuit
// page: "trigger off — confirmed 12:03:41 UTC", "written, not yet
// confirmed (app restarting)", "written, but the host still reports it
// enabled". Empty while the switch has yet to write, and in shadow mode.
func (c Circuit) TriggerStatus() string {
	if c.Pending() || c.Shadow {
		return ""
	}
	want, other := "off", "enabled"
	if !c.State.TriggerOff() {
		want, other = "on", "disabled"
	}
	switch c.ConfirmationOf() {
	case Confirmed:
		return fmt.Sprintf("trigger %s — confirmed %s", want, c.ConfirmedAt.UTC().Format("15:04:05 MST"))
	case Contradicted:
		return "written, but the host still reports it " + other
	case Unconfirmable:
		return "trigger " + want + " written (this switch cannot read the host's own state)"
	}
	return "written, not yet confirmed (app restarting)"
}

// HostReader is a switch that can read what a function app's host itself
// reports about its functions (true: disabled), after the restart a
// settings change causes. ErrCannotConfirm says a switch cannot.
type HostReader interface {
	Effective(ctx context.Context, app App, functions []string) (map[string]bool, error)
}

// ErrCannotConfirm is a switch without a view of the host.
var ErrCannotConfirm = errors.New("circuit: this switch cannot read the host's own state")

// VerifierSettings tune the verifier. Zero values take the defaults.
type VerifierSettings struct {
	// Deadline after the write by which the host must agree; default 5m
	// (a restart of a large app takes minutes). Until then the circuit is
	// "not yet confirmed"; after it, "contradicted".
	Deadline time.Duration
	// Timeout bounds the reads of one app; default 30s.
	Timeout time.Duration
	// Parallel bounds how many apps are read at once; default 8.
	Parallel int
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Verifier polls the host's view of every applied, unconfirmed circuit
// until it agrees or the deadline passes. Run it under a lease.
type Verifier struct {
	store Stores
	host  HostReader
	s     VerifierSettings
}

// NewVerifier fills defaults.
func NewVerifier(store Stores, host HostReader, s VerifierSettings) *Verifier {
	if s.Deadline <= 0 {
		s.Deadline = 5 * time.Minute
	}
	if s.Timeout <= 0 {
		s.Timeout = 30 * time.Second
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
	return &Verifier{store: store, host: host, s: s}
}

// Pass reads the host's view for every circuit that awaits one, one
// goroutine per app: a slow or failing app delays only its own circuits.
func (v *Verifier) Pass(ctx context.Context, f lease.Fence) error {
	cs, err := v.store.Circuits.List(ctx)
	if err != nil {
		return err
	}
	apps, err := v.store.Apps.List(ctx)
	if err != nil {
		return err
	}
	byApp := map[string][]Circuit{}
	for _, c := range cs {
		// A contradicted trigger is read again: a slow restart may yet agree.
		if got := c.ConfirmationOf(); c.Pending() || c.Shadow || got == Confirmed || got == Unconfirmable {
			continue
		}
		byApp[c.AppID] = append(byApp[c.AppID], c)
	}
	appByID := map[string]App{}
	for _, a := range apps {
		appByID[a.ID] = a
	}
	ids := make([]string, 0, len(byApp))
	for id := range byApp {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, v.s.Parallel)
	)
	for _, id := range ids {
		app, ok := appByID[id]
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := v.verify(ctx, f, app, byApp[id]); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (v *Verifier) verify(ctx context.Context, f lease.Fence, app App, cs []Circuit) error {
	fns := make([]string, len(cs))
	for i, c := range cs {
		fns[i] = c.Function
	}
	rctx, cancel := context.WithTimeout(ctx, v.s.Timeout)
	eff, err := v.host.Effective(rctx, app, fns)
	cancel()
	now := v.s.Clock.Now()
	var errs []error
	for _, c := range cs {
		got := Unconfirmed
		switch {
		case errors.Is(err, ErrCannotConfirm):
			got = Unconfirmable
		case err != nil:
			// The host cannot be read now (restarting, throttled): try
			// again next pass; past the deadline the page says so.
		case eff[c.Function] == c.State.TriggerOff():
			got = Confirmed
		case now.Sub(c.SwitchedAt()) >= v.s.Deadline:
			got = Contradicted
			v.s.Logger.Warn("the host does not follow the trigger setting", "circuit", c.ID(), "state", c.State.String(), "host_disabled", eff[c.Function])
		}
		if got == Unconfirmed || got == c.ConfirmationOf() {
			continue // nothing new to record
		}
		if serr := v.store.Circuits.SetConfirmation(ctx, f, c, got, now); serr != nil && !errors.Is(serr, ErrConflict) {
			errs = append(errs, serr)
		}
	}
	if err != nil && !errors.Is(err, ErrCannotConfirm) {
		errs = append(errs, fmt.Errorf("circuit: read the host of %s: %w", app.ID, err))
	}
	return errors.Join(errs...)
}
