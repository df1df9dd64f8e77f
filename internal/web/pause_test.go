package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A circuit paused for a time through the API is tripped by hand until
// then and resumed by the evaluator when it ends; a pause longer than the
// hub keeps events is refused, saying so, and trips nothing.
func TestAPauseResumesOnItsOwnAndOutlastsNoRetention(t *testing.T) {
	t.Parallel()
	srv, op, _ := apiServer(t)
	ctx := t.Context()
	ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.EventHub, ci.HubRetention = "orders", 24*time.Hour
	if err := srv.App.Store.Circuits.Put(ctx, ci); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/circuits/" + demo.AppID + "/ProcessOrders/trip"
	long := op.call(http.MethodPost, path, `{"reason": "database maintenance", "for": "30h"}`)
	if long.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(long.body, "the hub keeps events 24h") {
		t.Errorf("a pause past the hub's retention: %d %s", long.StatusCode, long.body)
	}
	state := func() circuit.Circuit {
		t.Helper()
		c, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := state(); c.State != circuit.Closed {
		t.Fatalf("the refused pause left ProcessOrders %s", c.State)
	}
	paused := op.call(http.MethodPost, path, `{"reason": "database maintenance", "for": "1h"}`)
	if paused.StatusCode != http.StatusOK || !strings.Contains(paused.body, `"pause_until":"`+srv.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)) {
		t.Errorf("the paused circuit's answer: %d %.400s", paused.StatusCode, paused.body)
	}
	if c := state(); c.State != circuit.ForcedOpen || !c.PauseUntil.Equal(srv.Clock.Now().Add(time.Hour)) {
		t.Fatalf("after a pause of an hour: %s until %s", c.State, c.PauseUntil)
	}
	srv.Clock.Advance(59 * time.Minute)
	if c := state(); c.State != circuit.ForcedOpen {
		t.Fatalf("a minute before its end the pause is %s", c.State)
	}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		srv.Clock.Advance(5 * time.Second)
		c := state()
		return c.State == circuit.Closed && strings.Contains(c.Reason, "the pause ended"), "ProcessOrders is " + c.State.String() + ": " + c.Reason
	})
}

// The same on the real clock: paused for 3 s, the circuit's trigger is
// off, then on again on its own.
func TestAPauseEndsOnTheRealClock(t *testing.T) {
	t.Parallel()
	token, hash := auth.NewAPIToken()
	srv := apptest.StartRealClock(t, map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + hash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	op := apiClient{t, newBrowser(t, srv.URL), token}
	began := time.Now()
	wantStatus(t, op.call(http.MethodPost, "/api/v1/circuits/"+demo.AppID+"/ProcessOrders/trip", `{"for": "3s"}`), http.StatusOK)
	var sawOff bool
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		sawOff = sawOff || c.State == circuit.ForcedOpen && !c.Pending()
		return c.State == circuit.Closed && !c.Pending(), "ProcessOrders is " + c.State.String()
	})
	took := time.Since(began)
	t.Logf("resumed on its own %s after a pause of 3 s", took.Round(100*time.Millisecond))
	if !sawOff || took < 3*time.Second {
		t.Errorf("the pause: switched off %v, resumed after %s; want off, then on after 3 s", sawOff, took)
	}
}
