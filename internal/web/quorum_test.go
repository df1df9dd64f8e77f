package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// A circuit with a quorum of two instances stays closed while one
// instance reports many failures, and trips once a second one reports
// some too; the page counts the instances, the flip says how many.
func TestAQuorumTripsOnlyWhenEnoughInstancesFail(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	ctx := t.Context()
	ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.Rule.MinInstances = 2
	if err := srv.App.Store.Circuits.UpdateSettings(ctx, ci); err != nil {
		t.Fatal(err)
	}
	report := func(instance string, count int) {
		t.Helper()
		body := `{"failures":[{"function":"ProcessOrders","at":"` + srv.Clock.Now().Add(-time.Second).Format(time.RFC3339) + `","count":` + strconv.Itoa(count) + `}]}`
		wantStatus(t, postWithHeaders(t, srv.URL, body, map[string]string{"X-Fusebox-Instance": instance}), http.StatusAccepted)
	}
	state := func() circuit.Circuit {
		t.Helper()
		c, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	report("vm-1", 500)
	srv.NextTick(t)
	if c := state(); c.State != circuit.Closed {
		t.Fatalf("one instance's 500 failures tripped a circuit with a quorum of 2: %s (%s)", c.State, c.Reason)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	if page := viewer.get("/circuits/" + demo.AppID + "/ProcessOrders").body; !strings.Contains(page, "1 of the 2 instances its quorum needs reported them") {
		t.Errorf("the page does not count the instances:\n%s", section(page, `data-testid="count"`))
	}
	report("vm-2", 1)
	srv.NextTick(t)
	if c := state(); c.State != circuit.Open || !strings.Contains(c.Reason, "from 2 instances (quorum 2)") {
		t.Errorf("after a second instance's failure: %s (%q), want open from 2 instances", c.State, c.Reason)
	}
}
