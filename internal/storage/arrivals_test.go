package storage_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A row of failed calls as another writer might have left it.
type callsRow struct {
	tablestore.Meta
	Source string
	Last   time.Time
	Calls  string
}

// TestAnArrivalRowsCallsAreBoundedAndChecked: the failed calls an
// instance keeps read back as they were; calls that are no targets and
// trace ids, or more than an instance writes, are left out and listed,
// and their rows still read.
func TestAnArrivalRowsCallsAreBoundedAndChecked(t *testing.T) {
	svc, _ := testenv.Storage(t)
	ctx := t.Context()
	if err := svc.CreateTable(ctx, storage.TableArrivals); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	const trace1, trace2 = "4bf92f3577b34da6a3ce929d0e0e4736", "4bf92f3577b34da6a3ce929d0e0e4737"
	good := otlp.Arrival{App: "orders", Source: otlp.Traces, Bucket: now.Truncate(otlp.Bucket), Instance: "a", Exports: 2, Last: now}
	good.AddCall("inventory-db.example.com", trace1)
	good.AddCall("inventory-db.example.com", trace2)
	good.AddCall("payments", trace1)
	if err := st.Arrivals.PutArrivals(ctx, []otlp.Arrival{good}); err != nil {
		t.Fatal(err)
	}
	table := svc.Table(storage.TableArrivals)
	for i, calls := range []string{
		"inventory-db.example.com not-a-trace",
		"https://inventory-db.example.com/ " + trace1,
		"inventory-db.example.com",
		strings.Repeat("x.example.com "+trace1+"\n", 400),
	} {
		row := &callsRow{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: fmt.Sprintf("%s|traces|bad-%d", storage.FailurePartition(now.Truncate(otlp.Bucket)), i)}, Source: "traces", Last: now, Calls: calls}
		if err := table.Upsert(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := st.Arrivals.ArrivalsOf(ctx, "orders", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// Every row still reads (its counts and functions count); only the
	// calls that do not read are left out.
	if len(rows) != 5 {
		t.Fatalf("read %d rows; want all 5, the bad ones without their calls", len(rows))
	}
	for _, r := range rows {
		switch {
		case r.Instance == "a" && !reflect.DeepEqual(r.Calls, good.Calls):
			t.Errorf("the good row's calls read %v; want %v", r.Calls, good.Calls)
		case r.Instance != "a" && r.Calls != nil:
			t.Errorf("a row whose calls do not read kept %v", r.Calls)
		}
	}
	bad := 0
	for _, f := range st.Faults.List() {
		if f.Table == storage.TableArrivals {
			bad++
		}
	}
	if bad != 4 {
		t.Errorf("%d arrival rows listed as unreadable; want the 4 bad ones: %v", bad, st.Faults.List())
	}
	// Rows read without their calls still tell their signals whole; a row
	// that does not read at all leaves them unknown.
	if _, whole, err := st.Arrivals.SignalsOf(ctx, "orders", now.Add(-time.Hour)); err != nil || !whole {
		t.Errorf("rows read without their calls: whole %v (%v), want true", whole, err)
	}
	unreadable := &callsRow{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: storage.FailurePartition(now.Truncate(otlp.Bucket)) + "|metrics|x"}, Source: "metrics", Last: now}
	if err := table.Upsert(ctx, unreadable); err != nil {
		t.Fatal(err)
	}
	if rows, whole, err := st.Arrivals.SignalsOf(ctx, "orders", now.Add(-time.Hour)); err != nil || whole || len(rows) != 5 {
		t.Errorf("with a row that does not read: %d rows, whole %v (%v); want the 5 others, not whole", len(rows), whole, err)
	}
}

// An instance keeps at most MaxTargets targets, each with the first half
// and the latest half of MaxCallTraces traces.
func TestAnArrivalKeepsTheFirstAndLatestTracesOfEachTarget(t *testing.T) {
	var a otlp.Arrival
	for i := range 40 {
		a.AddCall("inventory-db", fmt.Sprintf("%032x", i))
		a.AddCall(fmt.Sprintf("target-%d", i), fmt.Sprintf("%032x", i))
	}
	if len(a.Calls) != otlp.MaxTargets {
		t.Errorf("%d targets kept; want %d", len(a.Calls), otlp.MaxTargets)
	}
	got := a.Calls["inventory-db"]
	if len(got) != otlp.MaxCallTraces || got[0] != fmt.Sprintf("%032x", 0) || got[7] != fmt.Sprintf("%032x", 7) || got[8] != fmt.Sprintf("%032x", 32) || got[15] != fmt.Sprintf("%032x", 39) {
		t.Errorf("kept %v; want traces 0–7 and 32–39", got)
	}
}
