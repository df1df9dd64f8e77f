package e2e_test

import (
	"strings"
	"testing"
	"time"

	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"
	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
)

// TestGuardingAFoundAppEndToEnd walks #35's journey in Chromium on the real
// clock, Azure Resource Manager being the SDK's fake server: an operator
// opens Discover, follows Guard… on the function app found there, reviews
// the plan, lowers the Event Hubs circuit's threshold, ticks zero-code
// reporting and confirms once, typing no function name, schedule or
// connection string. The app's host then exports, with the key the page
// showed: ProcessOrders' failures trip its circuit, which switches the
// trigger off through ARM; the Nightly timer's invocation becomes its
// job's run, with no ping. (A job going missing and recovering through
// its host's export is TestATimersOwnInvocationsAreItsRuns.)
func TestGuardingAFoundAppEndToEnd(t *testing.T) {
	t.Parallel()
	const sub = "00000000-0000-4000-8000-0000000000e2"
	arm, appSettings := apptest.GuardableARM(sub)
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": sub},
		apptest.Options{RealClock: true, ARMTransport: armfake.NewWebAppsServerTransport(arm)})

	p := newPage(t)
	var key string
	p.signIn(t, srv.URL, "olivia")
	p.do(t,
		chromedp.Navigate(srv.URL+"/apps/discover"),
		chromedp.Click(chromedp.CSS(`[data-testid="guard"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="guard-confirm"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="recipients"]`), "oncall@example.com"),
		chromedp.SetValue(chromedp.CSS(`input[name="threshold_ProcessOrders"]`), "3"),
		chromedp.Click(chromedp.CSS(`input[name="zero_code"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="guard-confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="app-key"]`)),
	)
	key = p.text(t, `[data-testid="app-key"]`)
	if !strings.HasPrefix(key, "fbx_") {
		t.Fatalf("the key page shows %q", key)
	}
	if got := appSettings.Get()["OTEL_EXPORTER_OTLP_HEADERS"]; got != "Authorization=Bearer "+key {
		t.Errorf("zero-code reporting was not switched on with the new key: %q", got)
	}
	js, err := srv.App.Store.Jobs.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var nightly jobs.Job
	for _, j := range js {
		if j.Function == "Nightly" {
			nightly = j
		}
	}
	if nightly.ID == "" || nightly.Schedule != "0 0 2 * * *" || nightly.TimeZone != "W. Europe Standard Time" {
		t.Fatalf("the timer's job was not made from ARM: %+v", nightly)
	}

	// The app's host exports its invocations with the new key, and keeps
	// failing as a host whose store is down does: a circuit made a moment
	// ago is known to the intake within 2 s (ingest.Settings.Refresh).
	host := hostWithKey(t, srv, key, demo.Shape{})
	host.Successes("Nightly", 1, time.Now())
	// The intake's answer comes after the runs are stored: once an export
	// is flushed, its timer's run is there.
	send := func() {
		t.Helper()
		for range 4 {
			host.Failures("ProcessOrders", 1, time.Now(), "The inventory store did not answer")
		}
		if err := host.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	send()
	runs, _, err := srv.App.Store.Runs.Recent(t.Context(), nightly.ID, 10, jobs.RunCursor{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("the Nightly timer's exported invocation made %d runs of its job, want 1", len(runs))
	}
	deadline := time.After(20 * time.Second)
	again := time.NewTicker(time.Second)
	defer again.Stop()
	for appSettings.Get()["AzureWebJobs.ProcessOrders.Disabled"] != "true" {
		select {
		case <-appSettings.Changed(): // ARM was written: look again
		case <-again.C:
			send()
		case <-deadline:
			t.Fatalf("ProcessOrders' trigger was not switched off within 20 s of failing over a threshold of 3: %v", appSettings.Get())
		}
	}
	if runs[0].State != jobs.StateOK {
		t.Errorf("the Nightly run is %+v, want ok", runs[0])
	}

	view := newPage(t)
	view.signIn(t, srv.URL, "victor")
	view.do(t,
		chromedp.Navigate(srv.URL+"/circuits/func-orders/ProcessOrders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="state"]`)),
	)
	if got := view.text(t, `[data-testid="state"]`); got != "open" {
		t.Errorf("the circuit page shows %q, want open", got)
	}
}
