package app

import (
	"context"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/eventhub"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/setaside/sendback"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
	"github.com/fusebox/fusebox/internal/switches/containerapps"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/telemetry"
)

// reach is everything that calls out of Fusebox: trigger switches (ARM,
// Container Apps, local settings), host insight, the apps' queues and the
// chat channels' poster.
type reach struct {
	router    switches.Router
	endpoints egress.Endpoints
	hubs      *eventhub.Reader
	hosts     *hostinsight.Source
	queues    *queues.Source
	sendBack  *sendback.Runner
	poster    notify.Poster
	// probes calls downstreams' health URLs, through the guarded dialer.
	probes *http.Client
	// keys reads an Entra tenant's signing keys, through the guarded dialer.
	keys *http.Client
	// fleet finds the subscriptions' function apps; nil without an Azure
	// identity or subscriptions to survey.
	fleet *fleet.Finder
	// discoverer lists apps' functions and triggers; nil without an
	// Azure identity.
	discoverer *appservice.Discoverer
	// drift checks what changed in Azure under each ARM app; nil without
	// an Azure identity.
	drift *fleet.DriftWatch
}

// reachOut builds the outbound side. Host insight and chat channels reach
// endpoints an operator typed: only through the guarded dialer, and host
// insight only with a credential that cannot be asked for anything but
// Storage and Event Hubs tokens, whatever a server's challenge says.
// Background send-backs live in life.
func reachOut(life context.Context, cfg *config.Config, o Options, store *storage.Store) reach {
	router := switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: cfg.Env == config.Development, Root: cfg.LocalSwitchRoot}, Delay: cfg.LocalSwitchDelay}}
	azureCred, insightCred := azureCredentials(cfg, o)
	if azureCred != nil {
		router.ARM = appservice.New(azureCred, appservice.Settings{Transport: o.ARMTransport, Tracing: telemetry.AzureProvider()})
		router.ContainerApp = containerapps.New(azureCred, containerapps.Settings{Transport: o.ARMTransport})
	}
	outbound := egress.Policy{AllowLoopback: cfg.Env == config.Development, AllowPrefixes: cfg.EgressAllow}
	endpoints := egress.Endpoints{Cloud: egress.Clouds[cfg.AzureCloud], Development: cfg.Env == config.Development}
	hubs := &eventhub.Reader{Credential: insightCred, Endpoints: endpoints, Policy: outbound}
	queueSource := &queues.Source{Credential: insightCred, Transport: outbound.Transporter(), Endpoints: endpoints}
	var finder *fleet.Finder
	var discoverer *appservice.Discoverer
	var drift *fleet.DriftWatch
	if azureCred != nil {
		discoverer = appservice.NewDiscoverer(azureCred, appservice.Settings{Transport: o.ARMTransport, Tracing: telemetry.AzureProvider()}, 0)
		if len(cfg.DiscoverSubscriptions) > 0 {
			finder = &fleet.Finder{Survey: discoverer.Survey, Subscriptions: cfg.DiscoverSubscriptions, Apps: store.Apps, Now: o.Clock.Now}
		}
		drift = &fleet.DriftWatch{Apps: store.Apps, Circuits: store.Circuits, JobFunctions: jobFunctions(store.Jobs),
			Functions: discoverer.Functions, Every: o.DriftEvery, Now: o.Clock.Now}
	}
	hosts := &hostinsight.Source{Credential: insightCred, Endpoints: endpoints, Transport: outbound.Transporter(), TTL: o.HostInsightTTL, Hubs: hubs}
	if azureCred != nil {
		// A hub's retention is ARM's to tell, read with the ARM identity.
		hosts.Keep = (&eventhub.ARMRetention{Credential: azureCred,
			Options: armwrite.Policy{}.WithDefaults().ClientOptions(o.ARMTransport, telemetry.AzureProvider())}).Retention
	}
	return reach{
		router: router, endpoints: endpoints, hubs: hubs, queues: queueSource, fleet: finder, discoverer: discoverer, drift: drift,
		hosts:    hosts,
		sendBack: &sendback.Runner{Queues: queueSource, Runs: store.SetAside, Audit: store.Audit, Now: o.Clock.Now, Logger: o.Logger, Life: life},
		poster:   notify.Poster{Now: o.Clock.Now, Client: outbound.Client(5 * time.Second)},
		probes:   outbound.Client(downstream.ProbeTimeout),
		keys:     outbound.Client(10 * time.Second),
	}
}

// azureCredentials are the credential of trigger switches (ARM tokens only)
// and that of host insight (Storage and Event Hubs tokens only; a separate
// user-assigned identity when FUSEBOX_HOST_INSIGHT_CLIENT_ID names one).
// Either is nil when no Azure identity is to be had.
func azureCredentials(cfg *config.Config, o Options) (arm, insight azcore.TokenCredential) {
	base := o.ARMCredential
	if base == nil {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			o.Logger.Warn("no Azure credential: apps registered with the ARM or Container Apps switch cannot be switched, and host insight reads connection strings only")
			return nil, nil
		}
		base = cred
	}
	arm = egress.Scope(base, egress.ScopesARM...)
	insightBase := base
	if cfg.HostInsightClientID != "" && o.ARMCredential == nil {
		cred, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(cfg.HostInsightClientID)})
		if err != nil {
			o.Logger.Warn("the host-insight identity is not to be had: host insight reads connection strings only", "client_id", cfg.HostInsightClientID)
			return arm, nil
		}
		insightBase = cred
	}
	return arm, egress.ForStorageAndEventHubs(insightBase)
}

// jobFunctions lists, by app, the functions the jobs name.
func jobFunctions(js interface {
	List(context.Context) ([]jobs.Job, error)
}) func(context.Context) (map[string][]string, error) {
	return func(ctx context.Context) (map[string][]string, error) {
		all, err := js.List(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string][]string{}
		for _, j := range all {
			if j.AppID != "" && j.Function != "" {
				out[j.AppID] = append(out[j.AppID], j.Function)
			}
		}
		return out, nil
	}
}
