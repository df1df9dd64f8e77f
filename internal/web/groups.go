package web

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/errgroups"
)

// The handler groups, one per room. Each holds only what its handlers use;
// New gives each the shared core.
type (
	// Intake takes what machines send: failure reports, OTLP exports and
	// job pings, each behind a key of its own.
	Intake struct {
		*core
		// AppKeys verify the keys of failure reports and OTLP exports.
		AppKeys *auth.AppKeys
		// Reports turn failure reports into rows (ingest.Service); OTLP
		// counts what function hosts export (ingest.Exports).
		Reports reportTaker
		OTLP    otlpTaker
		// Jobs finds a ping's job, Pings turns a ping into a run
		// (jobs.Recorder) and Catalog creates a job the ping key names.
		Jobs    pingJobs
		Pings   pingRecorder
		Catalog jobCreator

		unknownPings *ttlSet       // ping ids found not to exist lately
		pingCreates  *rate.Limiter // bounds the jobs the ping key's ?create=1 makes
		decoding     *exportSlots  // exports decoded at once, once their bodies are read
		pingSecrets  *pingSecrets  // the ping tokens of jobs read lately, hashed
	}

	// SignIn signs people in and out, locally or through OpenID Connect.
	SignIn struct {
		*core
		identity
		Audit auditAppender
	}

	// CircuitPages show circuits, trip and resume them by hand or by a
	// signed link, and edit their settings.
	CircuitPages struct {
		*core
		Apps     appReader
		Circuits circuitLister
		// The circuit service's parts: counting, switching by hand or by
		// link, settings, and drift.
		Counter  circuitCounter
		Switch   circuitSwitch
		Settings circuitSettings
		Drift    driftResolver
		Window   windowReader
		// Samples reads one circuit's rows with their error texts.
		Samples errgroups.Grouper
		// Episodes assemble an episode's record from the trip on.
		Episodes episodeReader
		Rates    rateReader
		Status   statusReader
		// Links verifies resume links.
		Links *alerts.Signer
		// FunctionLister lists an app's functions for the circuit form's
		// picker; nil leaves the picker empty.
		FunctionLister functionLister `web:"optional"`
		// Inspector reads an app's functions' triggers and the settings
		// a throttle plan reads (ARM apps); nil shows no plan.
		Inspector appInspector `web:"optional"`
		// SettingsReader reads an app's settings through its switch, for
		// the plan an Apply link's page shows; nil shows none.
		SettingsReader settingsReader `web:"optional"`
		// HostInsight reads apps' own storage for the circuit and resume
		// pages; nil shows none.
		HostInsight hostReader `web:"optional"`
		// HostSamples hold the hosts' learned concurrency over time; nil
		// draws no history.
		HostSamples hostSampleReader `web:"optional"`
		// SetAside is what the watcher last saw of the apps' set-aside
		// queues; nil shows none.
		SetAside keptSetAside `web:"optional"`
		// Channels checks that the channels a circuit names exist, for a
		// form with other problems to show them all at once.
		Channels channelChecker
	}

	// AppPages register function apps, issue their keys, and show the
	// work they set aside.
	AppPages struct {
		*core
		Registry appRegistry
		Apps     appReader
		Circuits circuitsNow
		Rates    rateReader
		// Arrivals reads what arrived over OTLP, for the Apps page.
		Arrivals arrivalReader
		// Queues reads the work apps set aside (poison and parking queues),
		// Kept is what the watcher last saw of them, and SendBack requeues or
		// deletes them; with Queues nil none of it is shown.
		Queues   setAsideReader `web:"optional"`
		Kept     keptSetAside
		SendBack sendBacker `web:"optional"`
		// Fleet is the last survey of the subscriptions' function apps;
		// nil when Fusebox surveys none.
		Fleet fleetFinder `web:"optional"`
		// Triggers lists an ARM app's functions with their triggers; nil
		// without an Azure identity.
		Triggers functionTriggers `web:"optional"`
		// Inspector reads what guarding a found site needs (its
		// functions and a few settings), and Guarding saves a confirmed
		// plan; nil without an Azure identity.
		Inspector appInspector `web:"optional"`
		Guarding  appGuarding
		// Drift is the last check of what changed in Azure under each
		// ARM app; nil without an Azure identity.
		Drift driftReader `web:"optional"`
	}

	// JobPages show jobs, their runs and gaps, edit them and their
	// maintenance windows.
	JobPages struct {
		*core
		Apps      appReader
		Jobs      jobReader
		Windows   maintenanceWindows
		Tokens    pingTokens
		Catalog   jobCatalog // saves jobs by the jobs' rules (jobs.Catalog)
		RunReader runReader
		Audit     auditAppender
		// FunctionRunner runs a job's function once for "Run now"; nil hides it.
		FunctionRunner functionRunner `web:"optional"`
		// HostInsight reads a timer function's own status; nil shows none.
		HostInsight hostReader `web:"optional"`
		// Channels checks that the channels a job names exist.
		Channels channelChecker

		weeks        *weekAssessor
		unknownPings *ttlSet
		pingSecrets  *pingSecrets // forgotten when a token is rotated here
	}

	// NotifyPages edit alert channels and show what was sent.
	NotifyPages struct {
		*core
		Channels channelStore
		// TestChannel sends a test message to a channel now.
		TestChannel func(ctx context.Context, ch alerts.Channel) error
		// Delivery reads the destinations the sender finds failing.
		Delivery deliveryReader
		Outbox   outboxStore
		Audit    auditAppender
		// Who names a channel: its users are listed beside it.
		Apps     appReader
		Circuits recentCircuits
		Jobs     jobLister
	}

	// OpsPages are what operators look at about Fusebox itself: the
	// overview, the audit log, locks, and the probes.
	OpsPages struct {
		*core
		Apps     appReader
		Circuits recentCircuits
		Counter  failingCounter
		Rates    rateReader
		Status   statusReader
		Jobs     jobLister
		Kept     keptSetAside
		Audit    auditLog
		Leases   leaseLister
		// Faults lists stored rows that could not be read.
		Faults faultLister
		// Delivery reads the destinations the sender finds failing.
		Delivery deliveryReader
		// HostInsight reads and breaks the hosts' own locks; nil shows none.
		HostInsight hostLocks `web:"optional"`
		// Ready reports whether Fusebox can serve: storage reachable and
		// migrations applied.
		Ready func(context.Context) error

		weeks     *weekAssessor
		started   time.Time  // readiness allows the first ticks their time
		readiness *readiness // the last /readyz answer, for a second
	}
)

// identity is Identity embedded under a name the wiring cannot set.
type identity = Identity
