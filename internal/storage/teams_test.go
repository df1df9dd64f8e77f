package storage_test

import (
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

type rawTeamRow struct {
	tablestore.Meta
	Members string
	Scopes  string
}

// A team row whose Scopes column does not read (written by hand, or past
// its bound) costs the team its scopes alone: its members keep their
// roles, and the fault is listed.
func TestATeamsBadScopesCostOnlyTheScopes(t *testing.T) {
	svc, _ := testenv.Storage(t)
	ctx := t.Context()
	if err := svc.CreateTable(ctx, storage.TableTeams); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	for name, scopes := range map[string]string{"billing": "/subscriptions/not-a-guid", "orders": strings.Repeat("00000000-0000-4000-8000-000000000001,", 500)} {
		row := rawTeamRow{Meta: tablestore.Meta{PartitionKey: "team", RowKey: name}, Members: `[{"who":"user:bianca","role":"operator"}]`, Scopes: scopes}
		if err := svc.Table(storage.TableTeams).Upsert(ctx, &row); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := st.Teams.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("read %d teams; want both, without their scopes", len(ts))
	}
	for _, tm := range ts {
		if len(tm.Members) != 1 || tm.Scopes != nil {
			t.Errorf("team %s: members %v, scopes %v; want its member and no scope", tm.Name, tm.Members, tm.Scopes)
		}
	}
	listed := 0
	for _, f := range st.Faults.List() {
		if f.Table == storage.TableTeams && strings.Contains(f.Problem, "Scopes") {
			listed++
		}
	}
	if listed != 2 {
		t.Errorf("%d faults listed for the two teams' scopes; want 2", listed)
	}
}
