package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/storage"
)

// circuits is a fixed list of circuits.
type circuits []circuit.Circuit

func (c circuits) List(context.Context) ([]circuit.Circuit, error) { return c, nil }

func reports(at time.Time, app string, names ...string) []storage.Report {
	var out []storage.Report
	for _, n := range names {
		out = append(out, storage.Report{App: app, Function: n, Second: at, Count: 1})
	}
	return out
}

// The cap on names without a circuit counts per app and clock hour: the
// 3rd new name of the hour is refused, the same names are not, and the
// next hour starts afresh; another app has a budget of its own.
func TestNamesWithoutACircuitAreCappedPerAppAndHour(t *testing.T) {
	r := ingest.NewRouter(circuits{{AppID: "orders", Function: "Process"}}, nil, ingest.Settings{MaxNames: 2})
	at := time.Date(2026, 12, 1, 9, 59, 59, 0, time.UTC)
	got, err := r.Route(t.Context(), "orders", reports(at, "orders", "Process", "A", "B", "C", "A"), ingest.MaxRows, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Counted) != 1 || got.Tallied() != 3 || len(got.Refused) != 1 || got.Refused[3] == "" {
		t.Fatalf("counted %d, tallied %d, refused %v", len(got.Counted), got.Tallied(), got.Refused)
	}
	if len(got.Tallies) != 2 || got.Tallies[0].Function != "A" || got.Tallies[0].Failures != 2 || fmt.Sprint(got.Tallies[0].Items, got.Tallies[1].Items) != "[1 4] [2]" {
		t.Errorf("tallies %+v, want A with 2 (items 1 and 4) and B with 1 (item 2)", got.Tallies)
	}
	other, _ := r.Route(t.Context(), "payments", reports(at, "payments", "C"), ingest.MaxRows, at)
	if len(other.Refused) != 0 {
		t.Errorf("another app's name refused: %v", other.Refused)
	}
	next, _ := r.Route(t.Context(), "orders", reports(at, "orders", "C"), ingest.MaxRows, at.Add(time.Second))
	if len(next.Refused) != 0 {
		t.Errorf("a new hour refuses %v", next.Refused)
	}
}

// One request back-dates 10,000 items, each to a second of its own: the
// first 200 rows are written and every later item that would need a row
// of its own is refused with why, while items adding to a row already
// written are kept; nothing older than the app's longest window (an hour
// at least) and ten minutes is taken.
func TestOneRequestWritesAtMostMaxRows(t *testing.T) {
	r := ingest.NewRouter(circuits{{AppID: "orders", Function: "Process", Settings: circuit.Settings{Window: 5 * time.Minute}}}, nil, ingest.Settings{})
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var in []storage.Report
	for i := range 10_000 {
		in = append(in, storage.Report{App: "orders", Function: "Process", Second: now.Add(-time.Duration(i%3600) * time.Second), Count: 1})
	}
	got, err := r.Route(t.Context(), "orders", in, ingest.MaxRows, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows != ingest.MaxRows {
		t.Errorf("the request writes %d rows, want %d", got.Rows, ingest.MaxRows)
	}
	// Items 0–199 open the 200 rows; 3600–3799 and 7200–7399 fall in them again.
	if want := 200 * 3; len(got.Counted) != want {
		t.Errorf("%d items kept, want the %d that fall in the first 200 seconds", len(got.Counted), want)
	}
	if why := got.Refused[200]; !strings.Contains(why, "200 rows") {
		t.Errorf("item 200 refused with %q", why)
	}
	if len(got.Counted)+len(got.Refused) != len(in) {
		t.Errorf("%d kept and %d refused of %d: some went unaccounted", len(got.Counted), len(got.Refused), len(in))
	}
	old, _ := r.Route(t.Context(), "orders", reports(now.Add(-71*time.Minute), "orders", "Process"), ingest.MaxRows, now)
	if why := old.Refused[0]; !strings.Contains(why, "1h10m") {
		t.Errorf("an item 71 minutes old: refused %q, want refused past 1h10m", why)
	}
	wide := ingest.NewRouter(circuits{{AppID: "orders", Function: "Process", Settings: circuit.Settings{Window: 6 * time.Hour}}}, nil, ingest.Settings{})
	kept, _ := wide.Route(t.Context(), "orders", reports(now.Add(-5*time.Hour), "orders", "Process"), ingest.MaxRows, now)
	if len(kept.Counted) != 1 {
		t.Errorf("an item 5 h old for a 6 h window: %v, want kept", kept.Refused)
	}
}

// The row budget counts rows, not requests: an app spends its burst and
// then its rate, all of a request or none, and another app's budget is
// its own.
func TestTheRowBudgetIsPerAppAndCountsRows(t *testing.T) {
	b := ingest.NewRowBudget(500, 1000)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		if !b.Spend("orders", 200, now) {
			t.Fatalf("request %d of 200 rows refused within a burst of 1,000", i)
		}
	}
	if b.Spend("orders", 200, now) {
		t.Error("a sixth request of 200 rows taken in the same instant")
	}
	if !b.Spend("payments", 200, now) {
		t.Error("another app refused while orders spent its budget")
	}
	if !b.Spend("orders", 200, now.Add(400*time.Millisecond)) {
		t.Error("400 ms at 500 rows/s did not give back 200 rows")
	}
}

type recorder struct{ rows map[string]bool }

func (r *recorder) Record(_ context.Context, _ string, reports []storage.Report) error {
	for _, rep := range reports {
		r.rows[rep.Function+rep.Second.String()] = true
	}
	return nil
}

// An OpenTelemetry export is as large as the SDKs' batch (512 spans), and
// a busy host spreads one over many functions and seconds: all of it is
// counted, where a report over the API stops at 200 rows, because no
// exporter sends refused spans again.
func TestAnExportOfAFullSDKBatchIsCountedWhole(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var cs circuits
	for i := range 64 {
		cs = append(cs, circuit.Circuit{AppID: "orders", Function: fmt.Sprintf("F%d", i), Settings: circuit.Settings{Window: time.Minute}})
	}
	items := make([]ingest.Item, 512)
	invs := make([]otlp.Invocation, 512)
	for i := range items {
		fn, at := fmt.Sprintf("F%d", i%64), now.Add(-time.Duration(i/64)*time.Second)
		items[i] = ingest.Item{Function: fn, At: at}
		invs[i] = otlp.Invocation{Function: fn, ID: fmt.Sprint(i), At: at, Failed: true}
	}
	service := func(rec *recorder) *ingest.Service {
		return &ingest.Service{Router: ingest.NewRouter(cs, nil, ingest.Settings{}), Failures: rec, Now: func() time.Time { return now },
			Writer: func() string { return "api.test" }, Budget: ingest.NewRowBudget(0, 0)}
	}
	api := &recorder{rows: map[string]bool{}}
	res, err := service(api).Take(t.Context(), ingest.Batch{AppID: "orders", Items: items})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != ingest.MaxRows || len(api.rows) != ingest.MaxRows {
		t.Errorf("over the API: %d accepted, %d rows; want %d", res.Accepted, len(api.rows), ingest.MaxRows)
	}
	exported := &recorder{rows: map[string]bool{}}
	x := &ingest.Exports{Reports: service(exported), Seen: &otlp.Seen{}, Arrivals: &ingest.Arrivals{}, Now: func() time.Time { return now }}
	ans, err := x.Take(t.Context(), ingest.Export{AppID: "orders", Protocol: "grpc", Mapped: otlp.Mapped{Source: otlp.Traces, Records: 512, Invocations: invs}})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Rejected != 0 || len(exported.rows) != 512 {
		t.Errorf("exported: %d refused (%s), %d rows; want 0 and 512", ans.Rejected, ans.Message, len(exported.rows))
	}
}
