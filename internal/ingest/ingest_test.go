package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/storage"
)

// circuits is a fixed list of circuits.
type circuits []circuit.Circuit

func (c circuits) List(context.Context) ([]circuit.Circuit, error) { return c, nil }

func reports(app string, names ...string) []storage.Report {
	var out []storage.Report
	for _, n := range names {
		out = append(out, storage.Report{App: app, Function: n, Count: 1})
	}
	return out
}

// The cap on names without a circuit counts per app and clock hour: the
// 3rd new name of the hour is refused, the same names are not, and the
// next hour starts afresh; another app has a budget of its own.
func TestNamesWithoutACircuitAreCappedPerAppAndHour(t *testing.T) {
	r := ingest.New(circuits{{AppID: "orders", Function: "Process"}}, nil, ingest.Settings{MaxNames: 2})
	at := time.Date(2026, 12, 1, 9, 59, 59, 0, time.UTC)
	got, err := r.Route(t.Context(), "orders", reports("orders", "Process", "A", "B", "C", "A"), at)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Counted) != 1 || got.Tallied() != 3 || len(got.Refused) != 1 || got.Refused[3] == "" {
		t.Fatalf("counted %d, tallied %d, refused %v", len(got.Counted), got.Tallied(), got.Refused)
	}
	if len(got.Tallies) != 2 || got.Tallies[0].Function != "A" || got.Tallies[0].Failures != 2 || fmt.Sprint(got.Tallies[0].Items, got.Tallies[1].Items) != "[1 4] [2]" {
		t.Errorf("tallies %+v, want A with 2 (items 1 and 4) and B with 1 (item 2)", got.Tallies)
	}
	other, _ := r.Route(t.Context(), "payments", reports("payments", "C"), at)
	if len(other.Refused) != 0 {
		t.Errorf("another app's name refused: %v", other.Refused)
	}
	next, _ := r.Route(t.Context(), "orders", reports("orders", "C"), at.Add(time.Second))
	if len(next.Refused) != 0 {
		t.Errorf("a new hour refuses %v", next.Refused)
	}
}
