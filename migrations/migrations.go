// Package migrations lists Fusebox's schema steps in the order they apply.
// A step is never edited once released: change the schema by appending a
// step. Every step must be safe to run twice (see internal/migrate).
package migrations

import (
	"context"
	"fmt"

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
