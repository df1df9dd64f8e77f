package funcapp

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/teams"
)

// This file keeps a team's reach at the Azure resources it was given.
// Fusebox's own identity may rewrite every app it can reach, so a record
// is not enough: what the record points at (the site, the settings file,
// the storage account, the namespace) is checked when it is named.

// ErrNoPrincipal is work that says nobody asked for it: refused.
var ErrNoPrincipal = errors.New("funcapp: no principal: refused")

// AppSettingsReader reads an app's own settings (the switch router).
type AppSettingsReader interface {
	Settings(ctx context.Context, app circuit.App) (map[string]string, error)
}

// TargetKey names where an app's switch writes, the same for every
// spelling of one target: ARM ids are case-insensitive, and a local
// settings file is named by its path resolved through links
// (localsettings.Where.Check).
func TargetKey(a circuit.App) string {
	switch a.Switch {
	case circuit.SwitchLocal:
		return "local|" + a.LocalSettings
	case circuit.SwitchContainerApp:
		return strings.ToLower("containerapp|" + a.SubscriptionID + "|" + a.ResourceGroup + "|" + a.Site)
	}
	return strings.ToLower("site|" + a.SubscriptionID + "|" + a.ResourceGroup + "|" + a.Site + "|" + a.Slot)
}

// asker is the principal ctx acts for; none is refused.
func asker(ctx context.Context) (auth.Principal, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return auth.Principal{}, ErrNoPrincipal
	}
	return p, nil
}

// placeable says what keeps p from putting app in its team: p must
// operate the team (apps of no team are admins'), and the app's target
// must lie in the team's scopes.
func (r *Registry) placeable(ctx context.Context, p auth.Principal, app circuit.App) (circuit.ValidationError, error) {
	if app.Team == "" {
		if !p.Admin() {
			return circuit.ValidationError{{Field: "team", Message: "choose one of your teams: only an admin keeps apps apart from every team"}}, nil
		}
		return nil, nil
	}
	if !p.On(app.Team).Allows(auth.RoleOperator) {
		return circuit.ValidationError{{Field: "team", Message: "is not a team you operate"}}, nil
	}
	if r.Teams == nil {
		return nil, nil
	}
	ts, err := r.Teams(ctx)
	if err != nil {
		return nil, err
	}
	t, ok := teams.Find(ts, app.Team)
	if !ok {
		return circuit.ValidationError{{Field: "team", Message: "is not a team"}}, nil
	}
	app, limited := r.withEnvironment(ctx, p, t, app)
	if limited {
		return circuit.ValidationError{{Field: targetField(app), Message: "Fusebox asked Azure about too many of your apps' Container Apps environments just now: try again in a minute"}}, nil
	}
	if err := t.Admits(app, r.Development); err != nil {
		return circuit.ValidationError{{Field: targetField(app), Message: err.Error()}}, nil
	}
	return nil, nil
}

// withEnvironment reads which Container Apps environment ARM says app
// runs in, when only an environment of t's scopes could admit it. A read
// that fails leaves it unknown, answered as an app in none of the
// scopes' environments: what ARM said of a resource outside the team's
// resource groups is not told.
func (r *Registry) withEnvironment(ctx context.Context, p auth.Principal, t teams.Team, app circuit.App) (_ circuit.App, limited bool) {
	if app.Switch == circuit.SwitchLocal || app.Hosting.Environment != "" || r.Hosting == nil || !t.HasEnvironments() || t.Reaches(app, r.Development) {
		return app, false
	}
	if !r.envReads.allow(sha256.Sum256([]byte(p.Subject + "\x00" + p.Name))) {
		return app, true
	}
	if h, err := r.Hosting.Detect(ctx, app); err == nil {
		app.Hosting.Environment = h.Environment
	}
	return app, false
}

// envLimiter allows each person a few ARM reads of environments a
// minute; it forgets everyone once it knows too many people. A person is
// kept as the hash of their subject and name: 32 bytes, whatever the
// identity provider signs.
type envLimiter struct {
	mu  sync.Mutex
	per map[[sha256.Size]byte]*rate.Limiter
}

const (
	envReadsBurst  = 10
	envReadsPeople = 1000
)

func (l *envLimiter) allow(who [sha256.Size]byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per == nil || len(l.per) >= envReadsPeople {
		l.per = map[[sha256.Size]byte]*rate.Limiter{}
	}
	lim, ok := l.per[who]
	if !ok {
		lim = rate.NewLimiter(rate.Every(6*time.Second), envReadsBurst)
		l.per[who] = lim
	}
	return lim.Allow()
}

// inScope refuses a change to a team's app that lies outside its team's
// scopes now (they were narrowed since it was placed): a person may not
// go on changing it; an admin may, or moves it.
func (r *Registry) inScope(ctx context.Context, p auth.Principal, app circuit.App) (circuit.ValidationError, error) {
	if p.Admin() || app.Team == "" {
		return nil, nil
	}
	return r.placeable(ctx, p, app)
}

// targetField is the field that names an app's target.
func targetField(app circuit.App) string {
	if app.Switch == circuit.SwitchLocal {
		return "local_settings"
	}
	return "site"
}

// normalized is app with its local settings path resolved, so that its
// target key is the same for every spelling.
func (r *Registry) normalized(app circuit.App) circuit.App {
	if app.Switch == circuit.SwitchLocal {
		if resolved, err := r.Local.Check(app.LocalSettings); err == nil {
			app.LocalSettings = resolved
		}
	}
	return app
}

// targetFree refuses app when another registered app names its target,
// however it is spelled (registrations from before targets were claimed
// are found by reading them all).
func (r *Registry) targetFree(ctx context.Context, app circuit.App) (circuit.ValidationError, error) {
	if r.Apps == nil {
		return nil, nil
	}
	all, err := r.Apps(ctx)
	if err != nil {
		return nil, err
	}
	key := TargetKey(app)
	for _, other := range all {
		if other.ID != app.ID && TargetKey(r.normalized(other)) == key {
			return takenError(app), nil
		}
	}
	return nil, nil
}

func takenError(app circuit.App) circuit.ValidationError {
	what := "this site and slot"
	switch app.Switch {
	case circuit.SwitchLocal:
		what = "this local settings file"
	case circuit.SwitchContainerApp:
		what = "this container app"
	}
	return circuit.ValidationError{{Field: targetField(app), Message: "another app is registered for " + what + ": a target belongs to one app (an admin may move that app to another team)"}}
}

// ownStores refuses, unless an admin gives it, host storage or an Event
// Hubs namespace that is another team's, or that Fusebox's own identity
// would reach for the team without the app's settings naming it: Fusebox
// reads and writes them (checkpoints, queues, the master key), so naming
// another app's account would hand them to whoever named it. An account
// or namespace another team's app reads belongs to that team; a
// connection string carrying a key proves its holder may reach it, and
// needs the app's settings no more (they may hold a Key Vault
// reference). Only values given now are checked ("": unchanged).
func (r *Registry) ownStores(ctx context.Context, p auth.Principal, app circuit.App, hostStorage, eventHubs string) (circuit.ValidationError, error) {
	if p.Admin() || (hostStorage == "" && eventHubs == "") {
		return nil, nil
	}
	var v circuit.ValidationError
	if r.Apps != nil {
		all, err := r.Apps(ctx)
		if err != nil {
			return nil, err
		}
		for _, other := range all {
			if other.ID == app.ID || other.Team == app.Team {
				continue
			}
			if hostStorage != "" && other.HostStorage != "" && sameStore(hostStorage, []string{other.HostStorage}, hostinsight.BlobEndpoint) {
				v = append(v, circuit.FieldError{Field: "host_storage", Message: "is the host storage of another team's app: a storage account belongs to one team (an admin may set it)"})
				hostStorage = ""
			}
			if eventHubs != "" && other.EventHubs != "" && sameStore(eventHubs, []string{other.EventHubs}, eventhub.Namespace) {
				v = append(v, circuit.FieldError{Field: "event_hubs", Message: "is a namespace another team's app reads: a namespace belongs to one team (an admin may set it)"})
				eventHubs = ""
			}
		}
	}
	if carriesKey(hostStorage) {
		hostStorage = ""
	}
	if carriesKey(eventHubs) {
		eventHubs = ""
	}
	if hostStorage == "" && eventHubs == "" {
		return v, nil
	}
	var settings map[string]string
	var readErr error
	if r.AppSettings == nil {
		readErr = errors.New("funcapp: no reader of app settings")
	} else {
		settings, readErr = r.AppSettings.Settings(ctx, app)
	}
	if readErr != nil {
		// Said in Fusebox's words: the reader's text may be a remote
		// server's.
		why := "Fusebox could not read the app's own settings to confirm it is the app's own; give a connection string with its key, or ask an admin"
		if hostStorage != "" {
			v = append(v, circuit.FieldError{Field: "host_storage", Message: why})
		}
		if eventHubs != "" {
			v = append(v, circuit.FieldError{Field: "event_hubs", Message: why})
		}
		return v, nil
	}
	storages, namespaces := fleet.OwnStores(settings, r.blobSuffix())
	if hostStorage != "" && !sameStore(hostStorage, storages, hostinsight.BlobEndpoint) {
		v = append(v, circuit.FieldError{Field: "host_storage", Message: "is not the storage account the app's own AzureWebJobsStorage settings name: Fusebox's identity reads only the app's own host storage (give a connection string with its key, or ask an admin)"})
	}
	if eventHubs != "" && !sameStore(eventHubs, namespaces, eventhub.Namespace) {
		v = append(v, circuit.FieldError{Field: "event_hubs", Message: "is not a namespace the app's own settings connect to: Fusebox's identity reads only the hubs the app consumes (give a connection string with its key, or ask an admin)"})
	}
	return v, nil
}

// carriesKey says a connection string carries a key or signature: its
// holder may reach the account or namespace without Fusebox's identity.
func carriesKey(s string) bool {
	low := strings.ToLower(s)
	return strings.Contains(low, "accountkey=") || strings.Contains(low, "sharedaccesssignature=") || strings.Contains(low, "sharedaccesskey=")
}

// sameStore says whether given reaches the account or namespace one of
// own reaches.
func sameStore(given string, own []string, of func(string) (string, error)) bool {
	want, err := of(given)
	if err != nil {
		return false
	}
	for _, o := range own {
		if got, err := of(o); err == nil && got == want {
			return true
		}
	}
	return false
}

func (r *Registry) blobSuffix() string {
	if r.BlobSuffix == "" {
		return "blob.core.windows.net"
	}
	return r.BlobSuffix
}

// claim takes app's target for it; a target another app holds is
// refused as taken.
func (r *Registry) claim(ctx context.Context, app circuit.App) error {
	if r.Targets == nil {
		return nil
	}
	err := r.Targets.ClaimTarget(ctx, TargetKey(app), app.ID)
	if errors.Is(err, circuit.ErrConflict) {
		return takenError(app)
	}
	if err != nil {
		return fmt.Errorf("funcapp: claim the target of %s: %w", app.ID, err)
	}
	return nil
}

// SharedTargets lists the apps that name one target, registered before a
// target could belong to only one app: a line a target, naming its apps.
func SharedTargets(apps []circuit.App) []string {
	by := map[string][]string{}
	var keys []string
	for _, a := range apps {
		k := TargetKey(a)
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], a.ID)
	}
	var out []string
	for _, k := range keys {
		if ids := by[k]; len(ids) > 1 {
			out = append(out, Target(apps[slices.IndexFunc(apps, func(a circuit.App) bool { return a.ID == ids[0] })])+": "+strings.Join(ids, ", "))
		}
	}
	return out
}

// SharedStores lists the storage accounts that apps of different teams
// read as host storage (an admin set them so): whoever operates one of
// them may requeue, delete and move the other's work there. A line an
// account, naming its apps and their teams.
func SharedStores(apps []circuit.App) []string {
	by := map[string][]circuit.App{}
	var keys []string
	for _, a := range apps {
		ep, err := hostinsight.BlobEndpoint(a.HostStorage)
		if a.HostStorage == "" || err != nil {
			continue
		}
		if by[ep] == nil {
			keys = append(keys, ep)
		}
		by[ep] = append(by[ep], a)
	}
	var out []string
	for _, k := range keys {
		as := by[k]
		if !slices.ContainsFunc(as, func(a circuit.App) bool { return a.Team != as[0].Team }) {
			continue
		}
		names := make([]string, len(as))
		for i, a := range as {
			names[i] = a.ID + " (" + cmp.Or(a.Team, "no team") + ")"
		}
		out = append(out, k+": "+strings.Join(names, ", "))
	}
	return out
}
