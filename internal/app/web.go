package app

import (
	"context"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/web"
	"github.com/fusebox/fusebox/static"
)

// webServer is the pages, the API and the machine intake over the parts.
func webServer(cfg *config.Config, o Options, m *metrics.Metrics, st stores, id web.Identity, out reach, tell alerting, b breakers) (*web.Server, error) {
	assets, err := static.Load()
	if err != nil {
		return nil, err
	}
	store := st.store
	keys := appKeys(store) // identity.go
	jobStore, known := store.Jobs, alerts.KnownChannels{Channels: store.Channels, Sees: access.ChannelSeen}
	catalog := jobs.Catalog{Store: jobStore}
	registry := &funcapp.Registry{Store: store.Apps, Channels: known, Endpoints: out.endpoints,
		Local:   localsettings.Where{Anywhere: cfg.Env == config.Development, Root: cfg.LocalSwitchRoot},
		Hosting: out.router, Keys: keys, Audit: store.Audit, Now: o.Clock.Now,
		Teams: id.Teams.All, Development: cfg.Env == config.Development, Apps: store.Apps.List, Targets: store.Apps,
		AppSettings: out.router, BlobSuffix: "blob." + egress.Clouds[cfg.AzureCloud].Storage}
	apps := web.AppParts{Registry: registry, Apps: store.Apps, Circuits: store.Circuits, Rates: store.Rates, Arrivals: store.Arrivals,
		Queues: out.queues, Kept: store.SetAside, SendBack: out.sendBack}
	if out.fleet != nil {
		apps.Fleet = out.fleet
	}
	if out.discoverer != nil {
		apps.Triggers, apps.Inspector = out.discoverer, out.discoverer
	}
	if out.drift != nil {
		apps.Drift = out.drift
	}
	guarding := funcapp.Guarding{Apps: registry, Circuits: b.actions, Jobs: catalog, Audit: store.Audit, Now: o.Clock.Now, BaseURL: cfg.BaseURL.String()}
	if w, ok := out.router.ARM.(funcapp.SettingsWriter); ok {
		guarding.Settings = w
	}
	apps.Guarding = guarding
	return web.New(web.Parts{
		Base: web.Base{Config: cfg, Logger: o.Logger, Metrics: m, Assets: assets, Now: o.Clock.Now,
			StorageBudget: tablestore.WithBudget, StorageDown: tablestore.Unreachable},
		Identity: id,
		Intake: web.IntakeParts{AppKeys: keys, Reports: b.reports, OTLP: b.exports,
			Jobs: jobStore, Pings: pings(store), Catalog: catalog, Alerts: store.Alerts,
			AlertResponder: azalerts.Responder{Circuits: store.Circuits.List, Flip: b.actions.Flip,
				Downstreams: store.Downstreams.List, Keeper: b.downstreams}, AlertTokens: alertTokens(cfg, out, o)},
		SignIn: web.SignInParts{Audit: store.Audit},
		Circuits: web.CircuitParts{Apps: store.Apps, Circuits: store.Circuits,
			Counter: b.actions, Switch: b.actions, Settings: b.actions, Drift: b.actions, Window: storage.PageRows{Evaluator: store.Failures, Own: store.Failures.Reader()}, Samples: &errortexts.Cache{Rows: store.Failures.Reader(), Stamps: store.Failures},
			Episodes: episode.Reader{Flips: store.Circuits, Notices: store.Outbox, Audit: store.Audit, Rows: store.Failures.Reader(), Kept: storage.FailureRetention, Replays: store.Replays},
			Rates:    store.Rates, Status: store.Status, Links: tell.signer, FunctionLister: out.router, SettingsReader: out.router, Inspector: inspector(out),
			HostInsight: out.hosts, HostSamples: store.HostSamples, SetAside: store.SetAside, Channels: known, Replay: b.replay,
			Downstreams: store.Downstreams, Keeper: b.downstreams, Audit: store.Audit, History: store.Replays, Calls: store.Arrivals, Probes: store.Probes},
		Apps: apps,
		Jobs: web.JobParts{Apps: store.Apps, Jobs: jobStore, Windows: jobStore, Tokens: jobStore, Catalog: catalog, RunReader: store.Runs, Audit: store.Audit,
			FunctionRunner: out.router, HostInsight: out.hosts, Channels: known},
		Notify: web.NotifyParts{Channels: store.Channels, TestChannel: tell.tester.Test, Delivery: store.Status, Outbox: store.Outbox,
			Audit: store.Audit, Apps: store.Apps, Circuits: store.Circuits, Jobs: jobStore},
		Ops: web.OpsParts{Apps: store.Apps, Circuits: store.Circuits, Counter: b.actions, Rates: store.Rates, Status: store.Status,
			Jobs: jobStore, Kept: store.SetAside, Audit: store.Audit, Leases: st.locker, Faults: store.Faults, Delivery: store.Status,
			HostInsight: out.hosts, Ready: st.ready, Tokens: store.Tokens, Issued: id.Issued,
			TeamStore: store.Teams, AppTeams: store.Apps, Channels: known, Alerts: store.Alerts},
	})
}

// inspector is the discoverer, or none: a nil pointer in an interface
// would not read as none.
func inspector(out reach) interface {
	Inspect(ctx context.Context, app circuit.App) (fleet.Inspection, error)
} {
	if out.discoverer == nil {
		return nil
	}
	return out.discoverer
}

// alertTokens verifies an action group's secure webhook tokens, when the
// configuration names the tenant and app registration; nil otherwise.
func alertTokens(cfg *config.Config, out reach, o Options) web.AlertTokenVerifier {
	e := cfg.AzureAlertsEntra
	if e == nil {
		return nil
	}
	return &azalerts.Verifier{Issuer: e.Issuer, Audience: e.Audience, Tenant: e.Tenant, Role: e.Role, AppID: e.AppID, KeysURL: e.KeysURL, Client: out.keys, Now: o.Clock.Now}
}
