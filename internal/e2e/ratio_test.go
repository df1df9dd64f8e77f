package e2e_test

import (
	"strings"
	"testing"

	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/client"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
)

// An operator creates a circuit that trips on a failure ratio, the Go
// client reports calls of both kinds, and the circuit page's flip log
// shows the figures the trip weighed.
func TestRatioCircuitTrips(t *testing.T) {
	t.Parallel()
	srv, p, settings := signedIn(t, "olivia")
	p.do(t,
		chromedp.Navigate(srv.URL+"/circuits/new?app="+demo.AppID),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="circuit-form"]`)),
		chromedp.SendKeys(chromedp.CSS("#function"), "ShipParcels"),
		chromedp.SetValue(chromedp.CSS("#window"), "1m"),
		chromedp.Click(chromedp.CSS(`[data-testid="rule-ratio"]`)),
		chromedp.SetValue(chromedp.CSS("#ratio"), "50"),
		chromedp.SetValue(chromedp.CSS("#min_calls"), "200"),
		chromedp.Click(chromedp.CSS(`[data-testid="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="state"]`)),
	)
	if rule := p.text(t, "main"); !strings.Contains(rule, "50 % of calls fail within 1m, once 200 calls happened in it") {
		t.Fatalf("the circuit page does not say the rule:\n%s", rule)
	}

	// Calls count from the second after the circuit's creation, its last change.
	srv.Clock.Advance(time.Second)
	r, err := client.New(client.Options{URL: srv.URL, Key: demo.Key, Now: srv.Clock.Now, Instance: "worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	// 120 failures of 300 calls: 40 %, under the rule.
	for range 180 {
		r.Success("ShipParcels")
	}
	r.Failures("ShipParcels", 120, srv.Clock.Now(), "timeout")
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := afterTick(t, srv, "ShipParcels"); c.State != circuit.Closed {
		t.Fatalf("40 %% of 300 calls tripped a 50 %% rule: %q", c.Reason)
	}
	// 100 more failures: 220 of 400 calls, 55 %.
	r.Failures("ShipParcels", 100, srv.Clock.Now(), "timeout")
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	afterTick(t, srv, "ShipParcels")
	c := settle(t, srv, "ShipParcels") // and its switch
	if c.State != circuit.Open {
		t.Fatalf("55 %% of 400 calls did not trip: %s %q", c.State, c.Reason)
	}
	if off, _ := localsettings.Disabled(settings, "ShipParcels"); !off {
		t.Error("the trigger is still on")
	}
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ShipParcels"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="flips"]`)))
	flips := p.text(t, `[data-testid="flips"]`)
	for _, want := range []string{"55 % of 400 calls failed since 09:00:00 UTC (rule: ≥ 50 % once 200 calls)", "220 failed of 400 calls"} {
		if !strings.Contains(flips, want) {
			t.Errorf("the flip log lacks %q:\n%s", want, flips)
		}
	}
	if sources := p.text(t, `[data-testid="sources"]`); !strings.Contains(sources, "worker-1") {
		t.Errorf("the instance is not named:\n%s", sources)
	}
}

// afterTick returns the circuit as the evaluator's next tick left it.
func afterTick(t *testing.T, srv *apptest.Server, function string) circuit.Circuit {
	t.Helper()
	srv.NextTick(t)
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, function)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
