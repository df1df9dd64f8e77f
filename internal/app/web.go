package app

import (
	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errortexts"
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
	guarding := &funcapp.Guarding{Apps: registry, Circuits: b.actions, Jobs: catalog, Audit: store.Audit, Now: o.Clock.Now, BaseURL: cfg.BaseURL.String()}
	if w, ok := out.router.ARM.(funcapp.SettingsWriter); ok {
		guarding.Settings = w
	}
	base := web.Base{Config: cfg, Logger: o.Logger, Metrics: m, Assets: assets, Now: o.Clock.Now,
		StorageBudget: tablestore.WithBudget, StorageDown: tablestore.Unreachable}
	return web.New(base, id, &web.Services{
		Breakers: b.actions, Apps: store.Apps, Circuits: store.Circuits, Rates: store.Rates, Status: store.Status,
		Window:  storage.PageRows{Evaluator: store.Failures, Own: store.Failures.Reader()},
		Probes:  store.Probes,
		Samples: &errortexts.Cache{Rows: store.Failures.Reader(), Stamps: store.Failures},
		Episodes: episode.Reader{Flips: store.Circuits, Notices: store.Outbox, Audit: store.Audit, Rows: store.Failures.Reader(),
			Kept: storage.FailureRetention, Replays: store.Replays},
		Replay: b.replay, History: store.Replays, Downstreams: store.Downstreams, Keeper: b.downstreams, Links: tell.signer,
		Switches: out.router, HostInsight: out.hosts, HostSamples: store.HostSamples,
		Kept: store.SetAside, Queues: out.queues, SendBack: out.sendBack, Calls: store.Arrivals,
		Registry: registry, Guarding: guarding, Fleet: out.fleet, Drift: out.drift, Discoverer: out.discoverer, AppTeams: store.Apps,
		Jobs: jobStore, Catalog: catalog, Windows: jobStore, Runs: store.Runs, Pings: pings(store),
		AppKeys: keys, Reports: b.reports, OTLP: b.exports, Alerts: store.Alerts, AlertTokens: alertTokens(cfg, out, o),
		AlertResponder: azalerts.Responder{Circuits: store.Circuits.List, Flip: b.actions.Flip,
			Downstreams: store.Downstreams.List, Keeper: b.downstreams},
		Channels: store.Channels, KnownChannels: known, TestChannel: tell.tester.Test, Delivery: store.Status, Outbox: store.Outbox,
		Audit: store.Audit, Leases: st.locker, Faults: store.Faults, Tokens: store.Tokens, TeamStore: store.Teams, Ready: st.ready,
	})
}

// alertTokens verifies an action group's secure webhook tokens, when the
// configuration names the tenant and app registration; nil otherwise.
func alertTokens(cfg *config.Config, out reach, o Options) *azalerts.Verifier {
	e := cfg.AzureAlertsEntra
	if e == nil {
		return nil
	}
	return &azalerts.Verifier{Issuer: e.Issuer, Audience: e.Audience, Tenant: e.Tenant, Role: e.Role, AppID: e.AppID, KeysURL: e.KeysURL, Client: out.keys, Now: o.Clock.Now}
}
