// Package migrations lists Fusebox's schema steps in the order they apply.
// A step is never edited once released: change the schema by appending a
// step. Every step must be safe to run twice (see internal/migrate).
package migrations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Steps returns every step, oldest first.
func Steps() []migrate.Step {
	return []migrate.Step{
		{Version: 1, Name: "create the foundation tables", Apply: createTables(
			storage.TableSessions, storage.TableApps, storage.TableCircuits, storage.TableJobs, storage.TableAudit,
		)},
		{Version: 2, Name: "key circuit rows by c|function, to keep flip logs beside them", Apply: rekeyCircuits},
		{Version: 3, Name: "create the failures and status tables", Apply: createTables(storage.TableFailures, storage.TableStatus)},
		{Version: 4, Name: "create the per-minute failure rates table", Apply: createTables(storage.TableRates)},
		{Version: 5, Name: "create the mail outbox table", Apply: createTables(storage.TableOutbox)},
		{Version: 6, Name: "create the job runs table", Apply: createTables(storage.TableRuns)},
		{Version: 7, Name: "create the alert channels table", Apply: createTables(storage.TableChannels)},
		{Version: 8, Name: "create the host samples table", Apply: createTables(storage.TableHostSamples)},
		{Version: 9, Name: "create the OpenTelemetry arrivals table", Apply: createTables(storage.TableArrivals)},
		{Version: 10, Name: "create the set-aside queues table", Apply: createTables(storage.TableSetAside)},
		{Version: 11, Name: "give every job a ping token apart from its id; ids keep pinging for the grace", Apply: func(ctx context.Context, svc *tablestore.Service) error {
			return storage.GivePingTokens(ctx, svc, time.Now())
		}},
		{Version: 12, Name: "keep each circuit's settings in one Settings column (circuit.Spec as JSON), apart from its state", Apply: storage.MoveCircuitSettings},
		{Version: 13, Name: "keep each circuit's actuation (applied episode, switch errors, confirmation, drift) in its own row beside the circuit's", Apply: storage.MoveCircuitActuation},
		{Version: 14, Name: "keep what a circuit's throttle lowered in its actuation row, beside the switch's record", Apply: storage.MoveLowered},
		{Version: 15, Name: "create the replays table: checkpoint positions over time, and each episode's replay", Apply: createTables(storage.TableReplays)},
		{Version: 16, Name: "create the API tokens table: tokens people issue on the Tokens page", Apply: createTables(storage.TableTokens)},
		{Version: 17, Name: "create the teams table: teams, their members and default channels; apps, channels and jobs name their team in a column of their own", Apply: createTables(storage.TableTeams)},
		{Version: 18, Name: "create the alerts table: what Azure Monitor's action groups posted", Apply: createTables(storage.TableAlerts)},
		{Version: 19, Name: "create the downstreams table: shared dependencies, their member circuits across apps, their episodes and probe answers", Apply: createTables(storage.TableDownstreams)},
		{Version: 20, Name: "create the probes table: what each circuit's health probe heard in its episode", Apply: createTables(storage.TableProbes)},
	}
}

func createTables(names ...string) func(context.Context, *tablestore.Service) error {
	return func(ctx context.Context, svc *tablestore.Service) error {
		for _, n := range names {
			if err := svc.CreateTable(ctx, n); err != nil {
				return fmt.Errorf("create table %s: %w", n, err)
			}
		}
		return nil
	}
}

// circuitRowV1 is a circuit row as version 1 wrote it: RowKey = function.
type circuitRowV1 struct {
	tablestore.Meta
	Function        string
	Threshold       int32
	WindowSeconds   int32
	State           string
	Episode         int64
	ChangedAt       time.Time
	Reason          string
	FenceLease      string
	FenceGeneration int64
}

// rekeyCircuits copies each version-1 circuit row to the key "c|<function>"
// and then deletes the old row. Run again after a crash, it finds the copy
// made and only deletes.
func rekeyCircuits(ctx context.Context, svc *tablestore.Service) error {
	t := svc.Table(storage.TableCircuits)
	rows, err := tablestore.All[circuitRowV1](ctx, t, tablestore.Query{})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if strings.HasPrefix(r.RowKey, "c|") || strings.HasPrefix(r.RowKey, "f|") {
			continue
		}
		old := r.RowKey
		moved := r
		moved.RowKey, moved.Function, moved.ETag = "c|"+old, old, ""
		if err := t.Insert(ctx, &moved); err != nil && !errors.Is(err, tablestore.ErrExists) {
			return fmt.Errorf("copy circuit %s/%s: %w", r.PartitionKey, old, err)
		}
		if err := t.Delete(ctx, r.PartitionKey, old, r.ETag); err != nil && !errors.Is(err, tablestore.ErrNotFound) {
			return fmt.Errorf("delete old circuit row %s/%s: %w", r.PartitionKey, old, err)
		}
	}
	return nil
}
