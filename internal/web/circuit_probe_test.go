package web_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// waitAnswers waits until the circuit's probe heard at least n answers,
// and returns them.
func waitAnswers(t *testing.T, srv *apptest.Server, function string, n int) circuit.ProbeRecord {
	t.Helper()
	var r circuit.ProbeRecord
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		var err error
		if r, err = srv.App.Store.Probes.Get(t.Context(), demo.AppID, function); err != nil {
			t.Fatal(err)
		}
		return len(r.Answers) >= n, fmt.Sprintf("%d probe answers, want %d", len(r.Answers), n)
	})
	return r
}

// A circuit naming an alert rule and a health probe: "Resolved" leaves
// its trigger off while the probe answers 503 (the page says it waits and
// shows the answers, never the body); once the probe answers well twice
// in a row, the trigger goes on for a trial, by "probe".
func TestACircuitsProbeGatesTheTrialAfterItsAlertResolved(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": alertsSecret})
	ctx := t.Context()
	st := srv.App.Store
	if err := demo.Seed(ctx, st, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	health, healthy := apptest.Health(t)
	rule := "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-data/providers/Microsoft.Insights/metricAlerts/inventory-db-dtu-high"
	ci, err := st.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.AlertRules, ci.Probe = []string{rule}, circuit.Probe{URL: health, Good: 2, Every: time.Second}
	if err := st.Circuits.Put(ctx, ci); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../azalerts/testdata/metric.json")
	if err != nil {
		t.Fatal(err)
	}
	today := srv.Clock.Now().UTC().Format("2006-01-02")
	fired := strings.ReplaceAll(string(b), "2026-12-07T", today+"T")
	wantStatus(t, postAlert(t, srv.URL, alertsSecret, fired), http.StatusAccepted)
	srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "off by the alert", func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() })

	resolved := strings.Replace(fired, `"monitorCondition": "Fired"`, `"monitorCondition": "Resolved", "resolvedDateTime": "`+today+`T02:30:00Z"`, 1)
	if got := postAlert(t, srv.URL, alertsSecret, resolved); got.StatusCode != http.StatusAccepted || !strings.Contains(got.body, `"acted_on":["orders-demo/ProcessOrders"]`) {
		t.Fatalf("the resolved alert: %d %s", got.StatusCode, got.body)
	}
	stop := srv.RunFakeClock()
	defer stop()
	waitAnswers(t, srv, "ProcessOrders", 3)
	if c, _ := st.Circuits.Get(ctx, demo.AppID, "ProcessOrders"); c.State != circuit.ForcedOpen {
		t.Fatalf("ProcessOrders is %s while its probe answers 503; want it off", c.State)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/circuits/" + demo.AppID + "/ProcessOrders").body
	probe := section(page, `data-testid="probe"`)
	if !strings.Contains(probe, "Waiting for the probe (alert rule inventory-db-dtu-high resolved): 0 good in a row so far") || strings.Count(probe, ">bad</span>  503<") < 3 || strings.Contains(page, "secret-looking detail") {
		t.Errorf("the page's probe does not say it waits, with its bad answers (and never the body):\n%s", probe)
	}

	healthy.Store(true)
	on := srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "on trial by the probe", func(c circuit.Circuit) bool { return c.State != circuit.ForcedOpen })
	flips, err := st.Circuits.Flips(ctx, demo.AppID, "ProcessOrders", 3)
	if err != nil || len(flips) == 0 || flips[0].To != circuit.HalfOpen || flips[0].Actor != "probe" || !strings.Contains(flips[0].Reason, "the probe answered well 2 times in a row") {
		t.Errorf("after two good answers: %s; the flip log's last: %+v %v; want half-open by the probe", on.State, flips, err)
	}
}

// An open circuit with AutoResume and a probe stays off past its
// cooldown while the probe answers 503; the probe's good answers start
// its trial.
func TestACircuitsProbeGatesTheTrialAfterItsCooldown(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	ctx := t.Context()
	st := srv.App.Store
	health, healthy := apptest.Health(t)
	ci, err := st.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.Policy = circuit.Policy{AutoResume: true, Cooldown: 5 * time.Second}
	ci.Throttle = circuit.Throttle{}
	ci.Probe = circuit.Probe{URL: health, Good: 2, Every: time.Second}
	if err := st.Circuits.Put(ctx, ci); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"failures":[{"function":"ProcessOrders","at":%q,"count":%d}]}`, srv.Clock.Now().Add(-time.Second).Format(time.RFC3339), ci.Threshold+1)
	wantStatus(t, postJSON(t, srv.URL, demo.Key, body), http.StatusAccepted)
	stop := srv.RunFakeClock()
	defer stop()
	tripped := srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "open on its counts", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	r := waitAnswers(t, srv, "ProcessOrders", 3)
	now := srv.Clock.Now()
	if c, _ := st.Circuits.Get(ctx, demo.AppID, "ProcessOrders"); c.State != circuit.Open || !now.After(tripped.TrialAt()) {
		t.Fatalf("at %s, past the cooldown's end %s, with the probe answering %+v: %s; want it still open", now, tripped.TrialAt(), r.Answers, c.State)
	}
	healthy.Store(true)
	srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "on trial by the probe", func(c circuit.Circuit) bool { return c.State == circuit.HalfOpen || c.State == circuit.Closed })
	flips, err := st.Circuits.Flips(ctx, demo.AppID, "ProcessOrders", 5)
	var tried bool
	for _, f := range flips {
		tried = tried || f.To == circuit.HalfOpen && f.Actor == "probe" && strings.Contains(f.Reason, "cooldown of")
	}
	if err != nil || !tried {
		t.Errorf("the flip log %+v (%v); want a trial by the probe after the cooldown", flips, err)
	}
}

// Through the API a probe in the clear is refused by field; one over
// https is kept, and the circuit's answer says what its probe heard.
func TestACircuitsProbeIsSetAndReadThroughTheAPI(t *testing.T) {
	t.Parallel()
	_, op, viewer := apiServer(t)
	clear := op.call(http.MethodPost, "/api/v1/circuits", `{"app": "orders-demo", "function": "ShipParcels", "threshold": 25, "window_seconds": 60, "probe_url": "http://inventory.example.com/health"}`)
	if clear.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(clear.body, "probe_url") || !strings.Contains(clear.body, "https://") {
		t.Errorf("a probe in the clear: %d %s; want 422 naming probe_url", clear.StatusCode, clear.body)
	}
	wantStatus(t, op.call(http.MethodPost, "/api/v1/circuits", `{"app": "orders-demo", "function": "ShipParcels", "threshold": 25, "window_seconds": 60, "probe_url": "https://inventory.example.com/health", "probe_good": 4, "probe_every_seconds": 15}`), http.StatusCreated)
	got := viewer.call(http.MethodGet, "/api/v1/circuits/orders-demo/ShipParcels", "")
	wantStatus(t, got, http.StatusOK)
	if !containsAll(got.body, `"probe_url":"https://inventory.example.com/health"`, `"probe_good":4`, `"probe_every_seconds":15`, `"probe":{"good_in_a_row":0,"answers":[]}`) {
		t.Errorf("the circuit's answer: %s", got.body)
	}
}
