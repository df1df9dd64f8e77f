package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/telemetry"
)

// breakers is the circuit side: failure intake (the API and OTLP), the
// evaluator that trips, the verifier that checks the hosts obeyed, and
// the service behind the pages' actions.
type breakers struct {
	evaluator *circuit.Evaluator
	verifier  *circuit.Verifier
	actions   *circuit.Service
	reports   *ingest.Service
	exports   *ingest.Exports
	arrivals  *ingest.Arrivals
	// replay resumes Event Hubs functions from before their first failure;
	// replays keeps its history and places episodes' points.
	replay  *replay.Service
	replays *replay.Sampler
	// downstreams act on shared dependencies' members together.
	downstreams *downstream.Keeper
}

func guardCircuits(cfg *config.Config, o Options, st stores, out reach) (breakers, error) {
	store, now := st.store, o.Clock.Now
	claims, err := lease.NewClaims(store.Leases, st.locker.Identity(), nil, o.Logger)
	if err != nil {
		return breakers{}, err
	}
	evaluator := circuit.NewEvaluator(store.Breaker(), out.router, circuit.EvaluatorSettings{
		Claims: claims, Interval: cfg.EvaluatorInterval, DriftEvery: cfg.DriftCheckInterval, Clock: o.Clock, Logger: o.Logger, Identity: st.locker.Identity(),
		OnTransition: traceTransition,
	})
	reports := reportService(store, now, cfg.IngestRowLimit, evaluator.CheckReported)
	arrivals := &ingest.Arrivals{Store: store.Arrivals, Instance: st.locker.Identity(), Logger: o.Logger}
	actions := circuit.NewService(store.Breaker(), store.Audit, now, circuit.ServiceSettings{
		TraceOf: telemetry.TraceParent, Functions: out.router, Channels: alerts.KnownChannels{Channels: store.Channels, Sees: access.ChannelSeen}, Acts: access.AppActed,
		Changed: evaluator.TickNow, RefuseExpiring: cfg.PauseExpiry == "refuse"})
	rp := &replay.Service{Circuits: store.Circuits, Apps: store.Apps, Switch: actions, Records: store.Replays, History: store.Replays, Flips: store.Circuits, Unsettled: store.Replays.Unsettled,
		Failures: store.Failures.Reader(), Hosts: out.hosts, Now: now, Quiet: o.ReplayQuiet,
		Blobs: func(app circuit.App) (replay.Blobs, error) {
			c, err := out.hosts.Client(app)
			if err != nil {
				return nil, err
			}
			return replay.Checkpoints{Client: c}, nil
		}}
	keeper := &downstream.Keeper{Store: store.Downstreams, Members: actions, Circuits: store.Circuits, Apps: withTeamChannels(store, now),
		Outbox: store.Outbox, Audit: store.Audit, Probe: downstream.HTTPProber(out.probes, now), CircuitProbes: store.Probes, Now: now, Logger: o.Logger}
	return breakers{
		evaluator: evaluator, actions: actions, reports: reports, arrivals: arrivals, replay: rp, downstreams: keeper,
		replays:  &replay.Sampler{Circuits: storage.Lists{Store: store}, Hosts: out.hosts, History: store.Replays, Place: rp.Place, Settle: rp.Settle, Now: now},
		verifier: circuit.NewVerifier(store.Breaker(), out.router, circuit.VerifierSettings{Clock: o.Clock, Logger: o.Logger}),
		exports: &ingest.Exports{Reports: reports, Seen: &otlp.Seen{}, Arrivals: arrivals, Now: now,
			// A timer function's own invocations are its job's runs: no ping needed.
			Runs: (&jobs.Invocations{Jobs: store.Jobs, Runs: pings(store), Writes: store.Jobs.Writes, Now: now, Budget: reports.Budget}).TakeExported},
	}, nil
}

// reportService takes failure reports, from the HTTP API and the
// OpenTelemetry receiver; stored is told of each report's counts.
func reportService(store *storage.Store, now func() time.Time, rowsPerSecond float64, stored func([]circuit.Reported)) *ingest.Service {
	instance := make([]byte, 6)
	_, _ = rand.Read(instance)
	var requests atomic.Int64
	return &ingest.Service{
		Router: ingest.NewRouter(store.Circuits, store.Rates, ingest.Settings{}), Failures: store.Failures, Claims: store.Status, Now: now,
		Budget: ingest.NewRowBudget(rowsPerSecond, 0), Stored: stored,
		// One writer id per request: this process's random id and a counter.
		Writer: func() string { return fmt.Sprintf("api.%x.%d", instance, requests.Add(1)) },
	}
}

// stateOf is what /metrics says of the evaluator and the jobs.
func stateOf(store *storage.Store, evaluator *circuit.Evaluator) metrics.StateSource {
	return func(ctx context.Context) (metrics.State, error) {
		ev, err := store.Status.Evaluator(ctx)
		if err != nil {
			return metrics.State{}, err
		}
		// Switch calls are counted by the instance that made them.
		ev.Tally.Applies, ev.Tally.ApplyLatency = evaluator.Applies()
		js, err := store.Status.Scanner(ctx)
		return metrics.State{Evaluator: ev, Jobs: js}, err
	}
}

// traceTransition records a transition the evaluator made as a span in
// the trace of the failure report behind it, and returns the context in
// which the switch call that applies it runs, so the ARM call is its child.
func traceTransition(ctx context.Context, c circuit.Circuit, fl circuit.Flip) context.Context {
	ctx = telemetry.WithRemoteParent(ctx, fl.TraceParent)
	ctx, span := telemetry.Tracer().Start(ctx, "circuit "+fl.To.String(), trace.WithAttributes(
		attribute.String("fusebox.app", c.AppID), attribute.String("fusebox.function", c.Function),
		attribute.Int64("fusebox.episode", fl.Episode), attribute.Int("fusebox.failures", fl.Count)))
	span.SetAttributes(attribute.String("fusebox.reason", fl.Reason))
	span.End()
	return ctx
}
