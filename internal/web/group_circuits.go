package web

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/replay"
)

// CircuitParts are what CircuitPages's handlers use, given to New.
type CircuitParts struct {
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
	Samples errortexts.Grouper
	// Episodes assemble an episode's record from the trip on.
	Episodes episodeReader
	Rates    rateReader
	Status   statusReader
	// Links verifies resume links.
	Links *alerts.Signer
	// FunctionLister lists an app's functions for the circuit form's
	// picker; nil leaves the picker empty.
	FunctionLister functionLister
	// Inspector reads an app's functions' triggers and the settings
	// a throttle plan reads (ARM apps); nil shows no plan.
	Inspector appInspector
	// SettingsReader reads an app's settings through its switch, for
	// the plan an Apply link's page shows; nil shows none.
	SettingsReader settingsReader
	// HostInsight reads apps' own storage for the circuit and resume
	// pages; nil shows none.
	HostInsight hostReader
	// HostSamples hold the hosts' learned concurrency over time; nil
	// draws no history.
	HostSamples hostSampleReader
	// SetAside is what the watcher last saw of the apps' set-aside
	// queues; nil shows none.
	SetAside keptSetAside
	// Channels checks that the channels a circuit names exist, for a
	// form with other problems to show them all at once.
	Channels channelChecker
	// Replay resumes Event Hubs functions from before their first
	// failure; nil offers only "where it stopped".
	Replay replayer
	// History is the functions' checkpoint history, for pause forecasts;
	// nil forecasts none.
	History checkpointHistory
	// Downstreams are the shared dependencies; Keeper acts on their
	// members together; Audit records changes to them.
	Downstreams downstreamStore
	Keeper      downstreamKeeper
	Audit       auditAppender
	// Calls are what arrived over OTLP, whose failed calls propose
	// downstreams; nil proposes from error texts alone.
	Calls arrivalReader
	// Probes are what circuits' health probes heard; nil shows none.
	Probes probeReader
}

// missing names the required parts p lacks.
func (p CircuitParts) missing() []string {
	return absent("Circuits",
		part{"Apps", p.Apps == nil},
		part{"Circuits", p.Circuits == nil},
		part{"Counter", p.Counter == nil},
		part{"Switch", p.Switch == nil},
		part{"Settings", p.Settings == nil},
		part{"Drift", p.Drift == nil},
		part{"Window", p.Window == nil},
		part{"Samples", p.Samples == nil},
		part{"Downstreams", p.Downstreams == nil},
		part{"Keeper", p.Keeper == nil},
		part{"Audit", p.Audit == nil},
		part{"Episodes", p.Episodes == nil},
		part{"Rates", p.Rates == nil},
		part{"Status", p.Status == nil},
		part{"Links", p.Links == nil},
		part{"Channels", p.Channels == nil},
	)
}

// CircuitPages show circuits, trip and resume them by hand or by a
// signed link, and edit their settings.
type CircuitPages struct {
	CircuitParts
	*core
}

// What CircuitPages holds, each the few methods its handlers call.
type (
	circuitLister interface {
		List(context.Context) ([]circuit.Circuit, error)
		// Recent may answer from this instance's last list (see listFreshness).
		Recent(ctx context.Context, maxAge time.Duration) ([]circuit.Circuit, error)
		Get(ctx context.Context, appID, function string) (circuit.Circuit, error)
		Flips(ctx context.Context, appID, function string, limit int) ([]circuit.Flip, error)
	}
	circuitCounter interface {
		Counts(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
		// Failing counts only those with failures in their window.
		Failing(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
	}
	circuitSwitch interface {
		Flip(ctx context.Context, appID, function, actor, reason string, a circuit.Action) (circuit.Circuit, error)
		ResumeEach(ctx context.Context, ids []string, actor, reason string, acknowledge bool) []circuit.StormOutcome
		ResumeByLink(ctx context.Context, l circuit.LinkClaim, actor, reason string) (circuit.Circuit, error)
		ThrottleByLink(ctx context.Context, l circuit.LinkClaim, actor string) (circuit.Circuit, error)
		ApplyThrottle(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
		Acknowledge(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
	}
	settingsReader interface {
		Settings(ctx context.Context, app circuit.App) (map[string]string, error)
	}
	circuitSettings interface {
		Create(ctx context.Context, appID, function string, set circuit.Settings, actor string) (circuit.Circuit, error)
		Update(ctx context.Context, appID, function string, set circuit.Settings, actor string) (circuit.Circuit, error)
		Delete(ctx context.Context, appID, function, actor string) error
	}
	driftResolver interface {
		Adopt(ctx context.Context, appID, function, actor string) (circuit.Circuit, error)
		Override(ctx context.Context, appID, function, actor string) error
	}
	hostSampleReader interface {
		Concurrency(ctx context.Context, appID, function string, from time.Time) ([]hostinsight.ConcurrencySample, error)
		Waiting(ctx context.Context, appID, function string, from, to time.Time) ([]hostinsight.WaitingSample, error)
	}
	functionLister interface {
		Functions(ctx context.Context, app circuit.App) ([]string, error)
	}
	windowReader interface {
		Window(ctx context.Context, from, to time.Time) ([]circuit.FailureRow, []circuit.Rejection, error)
	}
	// replayer places and runs a resume from before the first failure
	// (replay.Service).
	replayer interface {
		Of(ctx context.Context, ci circuit.Circuit, app circuit.App) (replay.Record, error)
		Resume(ctx context.Context, appID, function, actor, reason string, link *circuit.LinkClaim) (circuit.Circuit, replay.Record, error)
	}
	probeReader interface {
		Get(ctx context.Context, appID, function string) (circuit.ProbeRecord, error)
	}
	// episodeReader assembles an episode's record (episode.Reader).
	episodeReader interface {
		Of(ctx context.Context, ci circuit.Circuit, n int64, now time.Time) (episode.Record, error)
	}
)
