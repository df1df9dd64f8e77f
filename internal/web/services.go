package web

import (
	"context"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/fault"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/setaside/sendback"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/teams"
)

// Services are the domain's services and stores the handlers use, each
// named once. The services are concrete; what is kept in storage is read
// through the port its domain package declares (internal/storage spells
// the methods), so handlers never see storage. A pointer marked "nil:
// off" is a part this instance may run without.
type Services struct {
	// Circuits: the service that counts, trips, resumes and saves them,
	// and what their pages read.
	Breakers    *circuit.Service
	Apps        circuit.AppStore
	Circuits    circuit.CircuitReader
	Rates       circuit.RateReader
	Status      circuit.StatusStore
	Window      circuit.WindowReader
	Probes      circuit.ProbeReader
	Samples     *errortexts.Cache // one circuit's rows with their error texts
	Episodes    episode.Reader
	Replay      *replay.Service // resumes Event Hubs functions from before their first failure
	History     replay.History  // checkpoint positions over time, for pause forecasts
	Downstreams downstream.Records
	Keeper      *downstream.Keeper
	Links       *alerts.Signer // verifies resume links
	// Switches reach apps' settings and functions (ARM, Container Apps
	// or a local settings file).
	Switches switches.Router
	// HostInsight reads apps' own storage (nil: off); HostSamples are
	// what the hosts learned over time.
	HostInsight *hostinsight.Source
	HostSamples hostinsight.SampleReader
	// Kept is what the set-aside watcher last saw of apps' queues;
	// Queues reads them now and SendBack requeues or deletes (nil: off).
	Kept     setaside.KeptReader
	Queues   *queues.Source
	SendBack *sendback.Runner
	// Calls are what arrived over OTLP.
	Calls otlp.ArrivalReader

	// Apps: registering and guarding them, and what Azure says of them.
	Registry *funcapp.Registry
	Guarding *funcapp.Guarding
	// Fleet is the last survey of the subscriptions' function apps, Drift
	// the last check of what changed under each ARM app, Discoverer reads
	// an ARM app's functions and triggers (each nil: off).
	Fleet      *fleet.Finder
	Drift      *fleet.DriftWatch
	Discoverer *appservice.Discoverer
	AppTeams   teams.AppMover

	// Jobs: saving them by the jobs' rules, their runs and windows.
	Jobs    jobs.Records
	Catalog jobs.Catalog
	Windows jobs.WindowStore
	Runs    jobs.RunReader
	Pings   jobs.Recorder

	// Machine intake: app keys, failure reports, OTLP exports, and what
	// Azure Monitor's action groups post.
	AppKeys        *auth.AppKeys
	Reports        *ingest.Service
	OTLP           *ingest.Exports
	Alerts         azalerts.Store
	AlertTokens    *azalerts.Verifier // nil: off
	AlertResponder azalerts.Responder

	// Notification channels and the outbox.
	Channels      alerts.ChannelStore
	KnownChannels alerts.KnownChannels // says which ids name no channel
	TestChannel   func(ctx context.Context, ch alerts.Channel) error
	Delivery      alerts.DeliveryReader
	Outbox        alerts.OutboxLog

	// Operations: who did what, leases, unreadable rows, tokens, teams.
	Audit     audit.Log
	Leases    *lease.Locker
	Faults    fault.Lister
	Tokens    auth.TokenStore
	TeamStore teams.Store
	// Ready says whether Fusebox can serve: storage reachable and
	// migrations applied.
	Ready func(context.Context) error
}

// missing names the required services s lacks.
func (s *Services) missing() []string {
	return absent("Services",
		part{"Breakers", s.Breakers == nil},
		part{"Apps", s.Apps == nil},
		part{"Circuits", s.Circuits == nil},
		part{"Rates", s.Rates == nil},
		part{"Status", s.Status == nil},
		part{"Window", s.Window == nil},
		part{"Probes", s.Probes == nil},
		part{"Samples", s.Samples == nil},
		part{"Replay", s.Replay == nil},
		part{"Downstreams", s.Downstreams == nil},
		part{"Keeper", s.Keeper == nil},
		part{"Links", s.Links == nil},
		part{"HostSamples", s.HostSamples == nil},
		part{"Kept", s.Kept == nil},
		part{"Calls", s.Calls == nil},
		part{"Registry", s.Registry == nil},
		part{"Guarding", s.Guarding == nil},
		part{"AppTeams", s.AppTeams == nil},
		part{"Jobs", s.Jobs == nil},
		part{"Windows", s.Windows == nil},
		part{"Runs", s.Runs == nil},
		part{"AppKeys", s.AppKeys == nil},
		part{"Reports", s.Reports == nil},
		part{"OTLP", s.OTLP == nil},
		part{"Alerts", s.Alerts == nil},
		part{"Channels", s.Channels == nil},
		part{"KnownChannels", s.KnownChannels.Channels == nil},
		part{"TestChannel", s.TestChannel == nil},
		part{"Delivery", s.Delivery == nil},
		part{"Outbox", s.Outbox == nil},
		part{"Audit", s.Audit == nil},
		part{"Leases", s.Leases == nil},
		part{"Faults", s.Faults == nil},
		part{"Tokens", s.Tokens == nil},
		part{"TeamStore", s.TeamStore == nil},
		part{"Ready", s.Ready == nil},
	)
}
