package migrations_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/migrations"
)

type v1Circuit struct {
	tablestore.Meta
	Threshold     int32
	WindowSeconds int32
	State         string
	Episode       int64
	ChangedAt     time.Time
	Reason        string
}

func TestCircuitsWrittenByVersion1AreRekeyed(t *testing.T) {
	svc, _ := testenv.Storage(t)
	ctx := t.Context()
	if err := svc.CreateTable(ctx, storage.TableLeases); err != nil {
		t.Fatal(err)
	}
	l, _ := lease.New(storage.New(svc).Leases, lease.Settings{})
	steps := migrations.Steps()
	v1, err := migrate.New(svc, steps[:1], migrate.Settings{Locker: l})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	changed := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := svc.Table(storage.TableCircuits).Insert(ctx, &v1Circuit{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "Process"},
		Threshold: 100, WindowSeconds: 30, State: "open", Episode: 3, ChangedAt: changed, Reason: "tripped"}); err != nil {
		t.Fatal(err)
	}

	latest, _ := migrate.New(svc, steps, migrate.Settings{Locker: l})
	if _, err := latest.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := storage.New(svc).Circuits.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("%d circuits after the migration, want 1", len(cs))
	}
	c := cs[0]
	if c.AppID != "orders" || c.Function != "Process" || c.Threshold != 100 || c.Window != 30*time.Second ||
		c.State.String() != "open" || c.Episode != 3 || !c.ChangedAt.Equal(changed) || c.Reason != "tripped" {
		t.Errorf("migrated circuit = %+v", c)
	}
	var old tablestore.Meta
	if err := svc.Table(storage.TableCircuits).Get(ctx, "orders", "Process", &old); err == nil {
		t.Error("the version-1 row is still there")
	}
}
