package demo_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// The demo's alert on the orders store, posted as `fusebox-dev demo-alert`
// posts it: fired, it trips the orders-store downstream, which names its
// rule, and so its member ProcessOrders, in the downstream's episode;
// resolved (the store has no probe without the demo host), it puts
// ProcessOrders on trial.
func TestTheDemoAlertTripsAndTriesProcessOrders(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret})
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	state := func() circuit.Circuit {
		t.Helper()
		c, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	id, fired := demo.NewAlertID(), srv.Clock.Now()
	status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Fired", fired, time.Time{}))
	if err != nil || status != http.StatusAccepted || !strings.Contains(body, `"acted_on":["downstream:orders-store","orders-demo/ProcessOrders"]`) {
		t.Fatalf("fired: %d %s %v", status, body, err)
	}
	if c := state(); c.State != circuit.ForcedOpen || c.Downstream != demo.Store+"#1" {
		t.Errorf("after the demo alert fired ProcessOrders is %s, marked %q; want forced open by orders-store's episode 1", c.State, c.Downstream)
	}
	status, body, err = demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Resolved", fired, fired.Add(time.Minute)))
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("resolved: %d %s %v", status, body, err)
	}
	if c := state(); c.State != circuit.HalfOpen {
		t.Errorf("after the demo alert resolved ProcessOrders is %s, want on trial", c.State)
	}
}
