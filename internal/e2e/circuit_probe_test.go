package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestACircuitsProbeJourneyOnTheRealClock: a circuit names an alert rule
// and a health probe. The rule fires and its trigger goes off; the rule
// resolves while the probe answers 503, and the page says the trial
// waits for the probe, with its bad answers; the dependency recovers, two
// good answers in a row put the trigger on for a trial, and the circuit's
// own counts close it after a quiet window.
func TestACircuitsProbeJourneyOnTheRealClock(t *testing.T) {
	t.Parallel()
	srv := apptest.StartRealClock(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret})
	ctx := t.Context()
	st := srv.App.Store
	if err := demo.Seed(ctx, st, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	health, healthy := apptest.Health(t)
	const window = 3 * time.Second
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: demo.AppID, Function: "ChargeCards", Settings: circuit.Settings{Threshold: 10, Window: window,
		AlertRules: []string{demo.AlertRule}, Probe: circuit.Probe{URL: health, Good: 2, Every: time.Second}}, State: circuit.Closed, ChangedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	id, fired := demo.NewAlertID(), time.Now()
	if status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Fired", fired, time.Time{})); err != nil || status != http.StatusAccepted {
		t.Fatalf("fired: %d %s %v", status, body, err)
	}
	srv.WaitCircuit(t, demo.AppID, "ChargeCards", "off", func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() })
	if status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(id, "Resolved", fired, time.Now())); err != nil || status != http.StatusAccepted {
		t.Fatalf("resolved: %d %s %v", status, body, err)
	}

	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	var got string
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ChargeCards"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="probe"]`)))
		got = p.text(t, `[data-testid="probe"]`)
		return strings.Contains(got, "Waiting for the probe") && strings.Count(got, "bad 503") >= 2, "the page's probe says " + got
	})
	if c, _ := st.Circuits.Get(ctx, demo.AppID, "ChargeCards"); c.State != circuit.ForcedOpen {
		t.Fatalf("ChargeCards is %s while its probe answers 503", c.State)
	}

	healthy.Store(true)
	recovered := time.Now()
	srv.WaitCircuit(t, demo.AppID, "ChargeCards", "on trial", func(c circuit.Circuit) bool { return c.State == circuit.HalfOpen && !c.Pending() })
	t.Logf("on trial %s after the probe's URL recovered (two good answers 1 s apart)", time.Since(recovered).Round(100*time.Millisecond))
	onTrial := time.Now()
	srv.WaitCircuit(t, demo.AppID, "ChargeCards", "closed", func(c circuit.Circuit) bool { return c.State == circuit.Closed })
	if took := time.Since(onTrial); took < window-time.Second {
		t.Errorf("the trial closed after %s: before a whole window of %s", took, window)
	}
	p.do(t, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid="probe"]`)))
	if got := p.text(t, `[data-testid="probe"]`); strings.Contains(got, "Waiting for the probe") {
		t.Errorf("closed, the page's probe still says %q", got)
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}
