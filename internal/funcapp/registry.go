// Package funcapp registers the function apps Fusebox guards: the rules a
// registration keeps (its channels exist, its host storage and hub are in
// the cloud, ARM says how it is hosted, a local settings file is allowed),
// its key, and what Fusebox reads of its host. The pages call it; so will
// discovery.
package funcapp

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/teams"
)

// What the registry reads and writes.
type (
	Store interface {
		Create(ctx context.Context, app circuit.App) error
		Put(ctx context.Context, app circuit.App) error
		Get(ctx context.Context, id string) (circuit.App, error)
	}
	Channels interface {
		Check(ctx context.Context, ids []string) error
	}
	HostingDetector interface {
		Detect(ctx context.Context, app circuit.App) (circuit.Hosting, error)
	}
	Auditor interface {
		Append(ctx context.Context, e audit.Entry) error
	}
	// KeyCache forgets an app's key the moment it is replaced here.
	KeyCache interface {
		Forget(appID string)
	}
)

// Registry registers apps and keeps their keys and host settings.
type Registry struct {
	Store    Store
	Channels Channels
	// Hosting asks ARM how an app is hosted; nil when no credential.
	Hosting   HostingDetector
	Endpoints egress.Endpoints // where host storage and hubs may be
	Local     localsettings.Where
	Keys      KeyCache
	Audit     Auditor
	Now       func() time.Time

	// Teams reads every team with its scopes (teams.Directory.All); nil:
	// scopes are not checked (tests of other rules).
	Teams func(ctx context.Context) ([]teams.Team, error)
	// Development lets teams' apps use the local switch.
	Development bool
	// Apps lists every registered app, to find a target named twice.
	Apps func(ctx context.Context) ([]circuit.App, error)
	// Targets keeps which app holds each target; nil: not claimed.
	Targets interface {
		ClaimTarget(ctx context.Context, target, appID string) error
		ReleaseTarget(ctx context.Context, target, appID string) error
	}
	// AppSettings reads an app's own settings, to confirm host storage
	// and hubs a person names are the app's own; nil: only admins name
	// them. BlobSuffix is the cloud's blob endpoint suffix.
	AppSettings AppSettingsReader
	BlobSuffix  string

	// envReads bounds how often one person has Fusebox's identity ask
	// ARM which Container Apps environment an app runs in: ARM's read
	// quota is every team's switching.
	envReads envLimiter
}

// Registered is a newly registered app and its key, shown once; Note says
// what could not be told now (ARM not answering).
type Registered struct {
	App  circuit.App
	Key  string
	Note string
}

// ParseGuardrail reads the guardrail as a form gives it: a whole number
// of circuits and a percentage, either empty for no limit.
func ParseGuardrail(maxOff, sharePercent string) (circuit.Guardrail, error) {
	var g circuit.Guardrail
	var v circuit.ValidationError
	if maxOff != "" {
		n, err := strconv.Atoi(maxOff)
		if err != nil {
			v = append(v, circuit.FieldError{Field: "guardrail_max", Message: "must be a whole number of circuits, such as 3"})
		}
		g.MaxOff = n
	}
	if sharePercent = strings.TrimSpace(strings.TrimSuffix(sharePercent, "%")); sharePercent != "" {
		pct, err := strconv.ParseFloat(sharePercent, 64)
		if err != nil {
			v = append(v, circuit.FieldError{Field: "guardrail_share", Message: "must be a percentage, such as 50"})
		}
		g.MaxShare = pct / 100
	}
	return g, v.Err()
}

// Register checks app and registers it with a new key, if its id is free:
// the write is conditional, so two registrations of one id a moment apart
// cannot both succeed. Problems come back as a ValidationError.
//
// Who asks is the principal of ctx: they must operate the app's team, the
// app's target must lie in the team's scopes and belong to no other app,
// and the host storage and hubs they name must be the app's own.
func (r *Registry) Register(ctx context.Context, app circuit.App, actor string) (Registered, error) {
	p, err := asker(ctx)
	if err != nil {
		return Registered{}, err
	}
	if problem := access.NameProblem(app.Team, app.ID); problem != "" {
		return Registered{}, circuit.ValidationError{{Field: "id", Message: problem}}
	}
	app.ID = access.For(p).Name(app.Team, app.ID)
	if err := r.check(ctx, app); err != nil {
		return Registered{}, err
	}
	app = r.normalized(app)
	for _, rule := range []func() (circuit.ValidationError, error){
		func() (circuit.ValidationError, error) { return r.placeable(ctx, p, app) },
		func() (circuit.ValidationError, error) { return r.targetFree(ctx, app) },
		func() (circuit.ValidationError, error) {
			return r.ownStores(ctx, p, app, app.HostStorage, app.EventHubs)
		},
	} {
		if v, err := rule(); err != nil || len(v) > 0 {
			if err != nil {
				return Registered{}, err
			}
			return Registered{}, v
		}
	}
	var note string
	if app.Switch == circuit.SwitchARM && r.Hosting != nil {
		h, err := r.Hosting.Detect(ctx, app)
		switch {
		case errors.Is(err, armwrite.ErrPermanent):
			return Registered{}, circuit.ValidationError{{Field: "site", Message: err.Error()}}
		case err != nil:
			// ARM could not be asked now: register anyway; the switch
			// reports what it finds on each circuit's page.
			note = "Fusebox could not read the site from ARM to tell how it is hosted (" + err.Error() + "). It is registered; its circuits' pages show what the switch finds."
		default:
			app.Hosting = h
			app.Linux = app.Linux || h.Linux
		}
	}
	if app.Switch == circuit.SwitchContainerApp && r.Hosting != nil {
		// Kept for teams whose scopes name environments.
		if h, err := r.Hosting.Detect(ctx, app); err == nil {
			app.Hosting.Environment = h.Environment
		}
	}
	key, hash := auth.NewAppKey(app.ID)
	app.APIKeyHash = hash
	if err := r.claim(ctx, app); err != nil {
		return Registered{}, err
	}
	if err := r.Store.Create(ctx, app); err != nil {
		if r.Targets != nil {
			// The id was taken: the target stays free for the app that is
			// registered with it. A failed release leaves a claim of an
			// app that does not exist, which the next claim takes over.
			_ = r.Targets.ReleaseTarget(context.WithoutCancel(ctx), TargetKey(app), app.ID)
		}
		if errors.Is(err, circuit.ErrConflict) {
			return Registered{}, circuit.ValidationError{{Field: "id", Message: "an app with this id is registered already"}}
		}
		return Registered{}, err
	}
	return Registered{App: app, Key: key, Note: note}, r.audit(ctx, actor, "registered app", app.ID, Target(app))
}

func (r *Registry) check(ctx context.Context, app circuit.App) error {
	if err := app.Validate(); err != nil {
		return err
	}
	if err := r.Channels.Check(ctx, app.Channels); err != nil {
		return err
	}
	if err := r.checkEscalation(ctx, app.Escalate); err != nil {
		return err
	}
	if err := hostinsight.CheckHostStorage(r.Endpoints, app.HostStorage); err != nil {
		return circuit.ValidationError{{Field: "host_storage", Message: err.Error()}}
	}
	if err := eventhub.Check(r.Endpoints, app.EventHubs); err != nil {
		return circuit.ValidationError{{Field: "event_hubs", Message: err.Error()}}
	}
	if app.Switch == circuit.SwitchLocal {
		if _, err := r.Local.Check(app.LocalSettings); err != nil {
			return circuit.ValidationError{{Field: "local_settings", Message: err.Error()}}
		}
	}
	return nil
}

// ReplaceKey gives app a new key; the old one stops on this instance now
// and on the others within auth.AppKeyTTL.
func (r *Registry) ReplaceKey(ctx context.Context, app circuit.App, actor string) (string, error) {
	key, hash := auth.NewAppKey(app.ID)
	fresh, err := r.Store.Get(ctx, app.ID)
	if err != nil {
		return "", err
	}
	fresh.APIKeyHash = hash
	if err := r.Store.Put(ctx, fresh); err != nil {
		return "", err
	}
	r.Keys.Forget(app.ID)
	return key, r.audit(ctx, actor, "replaced app key", app.ID, Target(app))
}

// HostChange is what an operator changes of the app's host settings: the
// secrets only when typed (or cleared), the rest as given.
type HostChange struct {
	HostID, HostStorage, EventHubs string
	ClearHost, ClearHubs           bool
	SetAsideLimit                  string // empty: the default
	InsightsAppID                  string // empty: no links to Application Insights
	ResumeFrom                     string // empty: from before the first failure
}

// UpdateHost changes what Fusebox reads of the app's own storage and hub.
// It says what changed (never a secret's value), and audits it; nothing
// changed writes nothing. Problems come back as a ValidationError.
func (r *Registry) UpdateHost(ctx context.Context, app circuit.App, h HostChange, actor string) ([]string, error) {
	p, err := asker(ctx)
	if err != nil {
		return nil, err
	}
	if v, err := r.inScope(ctx, p, app); err != nil || len(v) > 0 {
		if err != nil {
			return nil, err
		}
		return nil, v
	}
	next, changed, v := r.hostChange(app, h)
	own, err := r.ownStores(ctx, p, app, h.HostStorage, h.EventHubs)
	if err != nil {
		return nil, err
	}
	return r.save(ctx, app, next, changed, append(v, own...), actor, "changed host insight")
}

// Settings are what an app's registration may change once it is made.
// Where its switch writes (switch, subscription, group, site, slot, local
// settings file) is not among them: an app that moves is another app.
type Settings struct {
	DisplayName string
	Linux       bool
	Guardrail   circuit.Guardrail
	Channels    []string
	Escalate    circuit.Escalation
	Host        HostChange
	// Team, when set, moves the app (its circuits, jobs and queues with
	// it) to another team; the caller checked the mover may.
	Team *string
}

// Update changes an app's settings, host insight included, with the same
// checks as registering it. It says what changed (never a secret's value)
// and audits it; nothing changed writes nothing.
func (r *Registry) Update(ctx context.Context, app circuit.App, s Settings, actor string) ([]string, error) {
	p, err := asker(ctx)
	if err != nil {
		return nil, err
	}
	if !p.On(app.Team).Allows(auth.RoleOperator) {
		return nil, circuit.ValidationError{{Field: "team", Message: "the app is not of a team you operate"}}
	}
	if s.Team == nil || *s.Team == app.Team {
		if v, err := r.inScope(ctx, p, app); err != nil || len(v) > 0 {
			if err != nil {
				return nil, err
			}
			return nil, v
		}
	}
	next, changed, v := r.hostChange(app, s.Host)
	own, err := r.ownStores(ctx, p, app, s.Host.HostStorage, s.Host.EventHubs)
	if err != nil {
		return nil, err
	}
	v = append(v, own...)
	if s.DisplayName != app.DisplayName {
		next.DisplayName, changed = s.DisplayName, append(changed, fmt.Sprintf("name %q", s.DisplayName))
	}
	if s.Team != nil && *s.Team != app.Team {
		next.Team, changed = *s.Team, append(changed, fmt.Sprintf("team %q", *s.Team))
		// Moving is placing it anew: the new team must be the mover's
		// and reach the app's target.
		place, err := r.placeable(ctx, p, r.normalized(next))
		if err != nil {
			return nil, err
		}
		v = append(v, place...)
		if access.NameProblem(next.Team, app.ID) != "" {
			// A name that names its team stays that team's: moved, it
			// would read as the old team's and block its name there.
			v = append(v, circuit.FieldError{Field: "id", Message: "names another team, so the app cannot move to " + orNone(next.Team) + ": register it anew there"})
		}
	}
	if s.Linux != app.Linux {
		next.Linux, changed = s.Linux, append(changed, fmt.Sprintf("linux %t", s.Linux))
	}
	if s.Guardrail != app.Guardrail {
		next.Guardrail, changed = s.Guardrail, append(changed, fmt.Sprintf("guardrail %d circuits, %g %%", s.Guardrail.MaxOff, s.Guardrail.MaxShare*100))
	}
	if !slices.Equal(s.Channels, app.Channels) {
		if err := r.Channels.Check(ctx, s.Channels); err != nil {
			var ve circuit.ValidationError
			if !errors.As(err, &ve) {
				return nil, err
			}
			v = append(v, ve...)
		}
		next.Channels, changed = s.Channels, append(changed, "channels "+strings.Join(s.Channels, ", "))
	}
	if s.Escalate.After != app.Escalate.After || !slices.Equal(s.Escalate.To, app.Escalate.To) {
		if err := r.checkEscalation(ctx, s.Escalate); err != nil {
			var ve circuit.ValidationError
			if !errors.As(err, &ve) {
				return nil, err
			}
			v = append(v, ve...)
		}
		next.Escalate, changed = s.Escalate, append(changed, fmt.Sprintf("escalation to %s after %s", strings.Join(s.Escalate.To, ", "), s.Escalate.After))
	}
	return r.save(ctx, app, next, changed, v, actor, "changed app")
}

// hostChange is app with h applied, what changed, and h's problems.
func (r *Registry) hostChange(app circuit.App, h HostChange) (circuit.App, []string, circuit.ValidationError) {
	var v circuit.ValidationError
	if err := hostinsight.CheckHostStorage(r.Endpoints, h.HostStorage); err != nil {
		v = append(v, circuit.FieldError{Field: "host_storage", Message: err.Error()})
	}
	if err := eventhub.Check(r.Endpoints, h.EventHubs); err != nil {
		v = append(v, circuit.FieldError{Field: "event_hubs", Message: err.Error()})
	}
	var changed []string
	next := app
	next.HostStorage, changed = replaceSecret(app.HostStorage, h.HostStorage, h.ClearHost, "host storage", changed)
	next.EventHubs, changed = replaceSecret(app.EventHubs, h.EventHubs, h.ClearHubs, "Event Hubs", changed)
	limit := 0
	if h.SetAsideLimit != "" {
		n, err := strconv.Atoi(h.SetAsideLimit)
		if err != nil || n <= 0 {
			v = append(v, circuit.FieldError{Field: "set_aside_limit", Message: "must be a whole number of messages, or empty for the default"})
		}
		limit = n
	}
	if limit != app.SetAsideLimit {
		changed = append(changed, "set-aside limit "+quoteOrDerived(h.SetAsideLimit))
		next.SetAsideLimit = limit
	}
	if h.ResumeFrom != app.ResumeFrom {
		what := "resume from before the first failure first"
		if h.ResumeFrom == circuit.ResumeFromCheckpoint {
			what = "resume where it stopped first"
		}
		changed, next.ResumeFrom = append(changed, what), h.ResumeFrom
	}
	if h.HostID != app.HostID {
		changed = append(changed, "host id "+quoteOrDerived(h.HostID))
		next.HostID = h.HostID
	}
	if h.InsightsAppID != app.InsightsAppID {
		what := "no Application Insights links"
		if h.InsightsAppID != "" {
			what = fmt.Sprintf("Application Insights %q", h.InsightsAppID)
		}
		changed = append(changed, what)
		next.InsightsAppID = h.InsightsAppID
	}
	return next, changed, v
}

// save writes next over app when it is valid and something changed.
func (r *Registry) save(ctx context.Context, app, next circuit.App, changed []string, v circuit.ValidationError, actor, action string) ([]string, error) {
	var ve circuit.ValidationError
	if errors.As(next.Validate(), &ve) {
		v = append(v, ve...)
	}
	if len(v) > 0 {
		return nil, v
	}
	if len(changed) == 0 {
		return nil, nil
	}
	// The row is written whole: an admin's move of the app made while
	// this change was checked (an ARM read takes seconds) is kept, not
	// undone by the team read at the start.
	if next.Team == app.Team {
		fresh, err := r.Store.Get(ctx, app.ID)
		if err != nil {
			return nil, err
		}
		next.Team = fresh.Team
	}
	if err := r.Store.Put(ctx, next); err != nil {
		return nil, err
	}
	return changed, r.audit(ctx, actor, action, app.ID, strings.Join(changed, "; "))
}

// audit records a change that was made: it is kept even when the asker
// has gone away.
func (r *Registry) audit(ctx context.Context, actor, action, appID, detail string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return r.Audit.Append(ctx, audit.Entry{At: r.Now(), Actor: actor, Action: action, Target: appID, Detail: detail})
}

// Target says where an app's switch writes: its local settings file, or
// subscription/group/site and slot.
func Target(a circuit.App) string {
	if a.Switch == circuit.SwitchLocal {
		return a.LocalSettings
	}
	t := path.Join(a.SubscriptionID, a.ResourceGroup, a.Site)
	if a.Slot != "" {
		t += " (slot " + a.Slot + ")"
	}
	return t
}

func replaceSecret(old, typed string, clear bool, name string, changed []string) (string, []string) {
	switch {
	case typed != "":
		return typed, append(changed, name+" replaced")
	case clear && old != "":
		return "", append(changed, name+" cleared")
	}
	return old, changed
}

func quoteOrDerived(s string) string {
	if s == "" {
		return "derived"
	}
	return `"` + s + `"`
}

// checkEscalation refuses escalation channel ids that name no channel.
func (r *Registry) checkEscalation(ctx context.Context, e circuit.Escalation) error {
	return circuit.CheckEscalationChannels(ctx, r.Channels.Check, e)
}

// orNone names a team, or no team.
func orNone(team string) string {
	if team == "" {
		return "no team"
	}
	return team
}
