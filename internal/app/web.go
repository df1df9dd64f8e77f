package app

import (
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/metrics"
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
	registry := &funcapp.Registry{Store: store.Apps, Channels: alerts.KnownChannels{Channels: store.Channels}, Endpoints: out.endpoints,
		Local:   localsettings.Where{Anywhere: cfg.Env == config.Development, Root: cfg.LocalSwitchRoot},
		Hosting: out.router, Keys: id.AppKeys, Audit: store.Audit, Now: o.Clock.Now}
	return web.New(web.Deps{
		Base: web.Base{Config: cfg, Logger: o.Logger, Metrics: m, Assets: assets, Now: o.Clock.Now, Endpoints: out.endpoints,
			StorageBudget: tablestore.WithBudget, StorageDown: tablestore.Unreachable},
		Identity: id,
		CircuitDeps: web.CircuitDeps{Registry: registry, Apps: store.Apps, Circuits: store.Circuits,
			Actions: b.actions, Reports: b.reports, OTLP: b.exports, Arrivals: store.Arrivals, Window: store.Failures.Reader(), Rates: store.Rates, Status: store.Status,
			Links: tell.signer, Outbox: store.Outbox, FunctionLister: out.router, HostInsight: out.hosts, HostSamples: store.HostSamples,
			Queues: out.queues, Kept: store.SetAside, SendBack: out.sendBack},
		JobDeps:    web.JobDeps{Jobs: store.Jobs, Pings: pings(store), Catalog: jobs.Catalog{Store: store.Jobs}, RunReader: store.Runs, FunctionRunner: out.router},
		NotifyDeps: web.NotifyDeps{Channels: store.Channels, Delivery: store.Status, TestChannel: tell.tester.Test},
		Ops:        web.Ops{Audit: store.Audit, Leases: st.locker, Faults: store.Faults, Ready: st.ready},
	})
}
