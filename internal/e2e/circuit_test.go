package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
)

// signedIn starts Fusebox with the demo and a browser signed in as user.
func signedIn(t *testing.T, user string) (*apptest.Server, *page, string) {
	t.Helper()
	srv := apptest.Start(t, nil)
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, settings, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, user)
	return srv, p, settings
}

// signIn signs the page in as user through the sign-in form.
func (p *page) signIn(t *testing.T, base, user string) {
	t.Helper()
	p.do(t,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), user),
		chromedp.SendKeys(chromedp.CSS("#password"), apptest.Password),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="signed-in-as"]`)),
	)
}

// settle waits for an evaluator tick that began after the call (moving a
// fake clock on), then until storage shows the trigger applied, bounded by
// a deadline.
func settle(t *testing.T, srv *apptest.Server, function string) circuit.Circuit {
	t.Helper()
	if srv.Clock != nil {
		srv.NextTick(t)
	}
	return srv.WaitCircuit(t, demo.AppID, function, "applied", func(c circuit.Circuit) bool { return !c.Pending() })
}

func TestOperatorTripsAndResumesACircuit(t *testing.T) {
	t.Parallel()
	srv, p, settings := signedIn(t, "olivia")
	base := srv.URL + "/circuits/" + demo.AppID + "/ProcessOrders"
	p.do(t,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="trip"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="trip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.SendKeys(chromedp.CSS("#reason"), "bad deploy, rolling back"),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	if got := p.text(t, `[data-testid="state"]`); got != "forced-open" {
		t.Errorf("after trip the page says %q", got)
	}
	c := settle(t, srv, "ProcessOrders")
	if off, _ := localsettings.Disabled(settings, "ProcessOrders"); !off || c.State != circuit.ForcedOpen {
		t.Fatalf("after trip: state %s, trigger off %v", c.State, off)
	}

	p.do(t,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	c = settle(t, srv, "ProcessOrders")
	if off, _ := localsettings.Disabled(settings, "ProcessOrders"); off || c.State != circuit.Closed {
		t.Fatalf("after resume: state %s, trigger off %v", c.State, off)
	}
	p.do(t, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`[data-testid="flips"]`)))
	log := p.text(t, `[data-testid="flips"]`)
	for _, want := range []string{"forced-open → closed", "resumed by olivia", "closed → forced-open", "bad deploy, rolling back"} {
		if !strings.Contains(log, want) {
			t.Errorf("flip log lacks %q:\n%s", want, log)
		}
	}
	p.do(t, chromedp.Navigate(srv.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="audit"]`)))
	if a := p.text(t, `[data-testid="audit"]`); !contains(a, "olivia", "tripped", "resumed", "orders-demo/ProcessOrders") {
		t.Errorf("audit log lacks the actions:\n%s", a)
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}

func TestViewerSeesNoButtons(t *testing.T) {
	t.Parallel()
	srv, p, _ := signedIn(t, "victor")
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="state"]`)))
	html, err := chromedp.Run(p.ctx, chromedp.OuterHTML(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, `data-testid="trip"`) || strings.Contains(html, `data-testid="resume"`) {
		t.Error("a viewer is offered trip or resume")
	}
}

// TestDriftIsShownAndOverridden walks drift on the real clock: someone
// switches an open circuit's trigger back on by hand; the next drift check
// (every second here) records it, the circuit list the operator watches
// marks it at its next refresh, the circuit page says so, and the
// operator's override switches the trigger off again.
func TestDriftIsShownAndOverridden(t *testing.T) {
	t.Parallel()
	srv := apptest.StartRealClock(t, map[string]string{"FUSEBOX_DRIFT_CHECK_INTERVAL": "1s"})
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	// The operator watches the circuit list, which refreshes itself every
	// 5 s. SyncInventory is open in the demo; someone switches it back on
	// by hand.
	row := `[data-circuit="` + demo.AppID + `/SyncInventory"]`
	p.do(t, chromedp.Navigate(srv.URL+"/circuits"), chromedp.WaitVisible(chromedp.CSS(row)))
	if err := localsettings.SetDisabled(settings, "SyncInventory", false); err != nil {
		t.Fatal(err)
	}
	switched := time.Now()
	p.do(t, chromedp.WaitVisible(chromedp.CSS(row+` [data-testid="drift-badge"]`)))
	t.Logf("the list showed drift %s after the trigger was switched on by hand", time.Since(switched).Round(time.Millisecond))
	p.do(t,
		chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/SyncInventory"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="drift"]`)),
	)
	if d := p.text(t, `[data-testid="drift"]`); !strings.Contains(d, "someone switched it back on") {
		t.Errorf("drift warning says %q", d)
	}
	p.do(t,
		chromedp.Click(chromedp.CSS(`form[action$="/drift/override"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	settle(t, srv, "SyncInventory")
	if off, _ := localsettings.Disabled(settings, "SyncInventory"); !off {
		t.Error("override did not switch the trigger off again")
	}
}
