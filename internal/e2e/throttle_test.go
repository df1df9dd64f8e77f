package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/client"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/internal/throttle"
)

// TestThrottleJourney runs the demo host against Fusebox on the real
// clock, with a throttle stage on ProcessOrders:
//
//  1. a backlog meets an overloaded store, which answers 429 to batches of
//     more than 20 events: Fusebox lowers the batch size to a quarter
//     (50 → 12), the host restarts with it, the failures stop, the backlog
//     drains, and once quiet the settings ramp back to exactly what was
//     set — with no trip;
//  2. the store goes fully down: the throttle is not enough, the circuit
//     trips; the store comes back, an operator resumes in the browser, and
//     the function comes back at a quarter and ramps back up to exactly
//     what was set.
func TestThrottleJourney(t *testing.T) {
	// Not parallel: its ramp is judged on the real clock against the
	// demo host's own pace, which other journeys on the machine change.
	srv := apptest.StartRealClock(t, nil)
	dir := t.TempDir()
	settings := filepath.Join(dir, "local.settings.json")
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	// What the app ran with before: a batch size set, no prefetch.
	fifty := "50"
	if err := localsettings.Tune(settings, nil, map[string]*string{throttle.EventHubMaxBatch: &fifty}); err != nil {
		t.Fatal(err)
	}
	before, err := localsettings.Settings(settings)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	// The trip: more than 900 failures in 10 s, counted, once throttled,
	// from the throttle's write; the throttle: more than 20; each step
	// held 10 s. The host fails at most 100 events a step, 5 steps a
	// second: the first report trips nothing, and a quarter of the batch
	// failing (120 a second) trips within 10 s.
	ci.Window, ci.Threshold = 10*time.Second, 900
	ci.EventHub, ci.Throttle = "orders", circuit.Throttle{Threshold: 20, Quiet: 10 * time.Second}
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), ci); err != nil {
		t.Fatal(err)
	}
	conn := testenv.ConnectionString(t)
	bc, err := azblob.NewClientFromConnectionString(conn, &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	tag := strings.ToLower(strings.ReplaceAll(testenv.Prefix(t), "_", ""))
	rep, err := client.New(client.Options{URL: srv.URL, Key: demo.Key, Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = rep.Run(ctx) }()

	// The hub began 10 s ago: 200 events wait on each partition, and 20
	// more arrive each second.
	epoch := time.Now().Add(-10 * time.Second)
	throttling, offline := filepath.Join(dir, "store-throttling"), filepath.Join(dir, "store-offline")
	if err := os.WriteFile(throttling, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// What `fusebox local-host` does: restart the host when its Disabled
	// setting or a host option changes.
	local := runLocalHost(t, ctx, settings, func() *demo.Host {
		return &demo.Host{Settings: settings, Function: "ProcessOrders", Blob: bc, HostID: "demo-" + tag, Namespace: tag + ".servicebus.windows.net",
			EventHub: "orders-" + tag, Group: "$default", Partitions: 2, Rate: 20, Epoch: epoch, Offline: offline, Throttling: throttling, Reporter: rep,
			Retries: demo.RetryForever} // the store pushes back: each batch is tried again, smaller once throttled
	}, 200*time.Millisecond)
	host := local.host
	circuitNow := func() circuit.Circuit {
		c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitUntil := func(what string, limit time.Duration, ok func() bool) {
		t.Helper()
		testenv.Eventually(t, limit, func() (bool, string) {
			if ok() {
				return true, ""
			}
			c := circuitNow()
			return false, fmt.Sprintf("not %s: the circuit is %s (%s)", what, c.State, c.Reason)
		})
	}
	setting := func(name string) (string, bool) {
		s, err := localsettings.Settings(settings)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := s[name]
		return v, ok
	}

	// 1. The overloaded store: throttled, never tripped.
	start := time.Now()
	waitUntil("throttled and written", 20*time.Second, func() bool { c := circuitNow(); return c.State == circuit.Throttled && !c.Pending() })
	throttledAt := time.Since(start)
	if v, _ := setting(throttle.EventHubMaxBatch); v != "12" {
		t.Errorf("throttled: maxEventBatchSize %q; want 12, a quarter of 50", v)
	}
	waitUntil("the host restarted with the lowered batch", 10*time.Second, func() bool { h := host(); return h != nil && h.BatchSize() == 12 })
	waitUntil("ramped back and closed", 60*time.Second, func() bool { c := circuitNow(); return c.State == circuit.Closed && !c.Pending() })
	rampedAt := time.Since(start)
	after, err := localsettings.Settings(settings)
	if err != nil {
		t.Fatal(err)
	}
	if !equalSettings(before, after) {
		t.Errorf("after the ramp the settings are %v; want exactly %v", after, before)
	}
	if n := host().Failures(); n != 0 {
		t.Errorf("the host at full batch size again failed %d times; the backlog should have drained at the lowered size", n)
	}
	flips, err := srv.App.Store.Circuits.Flips(t.Context(), demo.AppID, "ProcessOrders", 20)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for i := len(flips) - 1; i >= 0; i-- {
		steps = append(steps, flips[i].To.String())
		if flips[i].To.TriggerOff() {
			t.Errorf("the overloaded store tripped the circuit: %s", flips[i].Reason)
		}
	}
	t.Logf("throttled %s after the backlog met the store; closed %s after, steps %v, host batch sizes at each start %v",
		throttledAt.Round(time.Millisecond), rampedAt.Round(time.Millisecond), steps, local.starts())

	// 2. The store fully down: throttled, then tripped.
	if err := os.Remove(throttling); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(offline, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil("tripped and switched off", 30*time.Second, func() bool { c := circuitNow(); return c.State == circuit.Open && !c.Pending() })
	if c := circuitNow(); !strings.Contains(c.Reason, "throttling was not enough") {
		t.Errorf("the trip says %q; want that throttling was not enough", c.Reason)
	}
	if v, _ := setting(throttle.EventHubMaxBatch); v != "12" {
		t.Errorf("tripped: maxEventBatchSize %q; want it kept lowered (12) for the resume", v)
	}
	if err := os.Remove(offline); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	p.do(t,
		chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	waitUntil("resumed at a quarter", 10*time.Second, func() bool { c := circuitNow(); return c.State == circuit.Throttled && c.Ramping && !c.Pending() })
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="throttle"]`)))
	if shown := p.text(t, `[data-testid="throttle"]`); !strings.Contains(shown, "Now holding the app at 25 %") || !strings.Contains(shown, throttle.EventHubMaxBatch+" was 50 before the throttle") {
		t.Errorf("the circuit page says of the throttle %q", shown)
	}
	if state := p.text(t, `[data-testid="state"]`); state != "throttled" {
		t.Errorf("the page's state says %q", state)
	}
	waitUntil("ramped back after the resume", 60*time.Second, func() bool { c := circuitNow(); return c.State == circuit.Closed && !c.Pending() })
	after, err = localsettings.Settings(settings)
	if err != nil {
		t.Fatal(err)
	}
	if !equalSettings(before, after) {
		t.Errorf("after the resume's ramp the settings are %v; want exactly %v", after, before)
	}
	// Closed again: its page loads what the throttle would write if it
	// fired now, from the settings as they are (put back).
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="throttle-plan"]`)))
	if plan := p.text(t, `[data-testid="throttle-plan"]`); !strings.Contains(plan, throttle.EventHubMaxBatch+": 50 → 12") {
		t.Errorf("the circuit page's throttle plan says %q; want %s: 50 → 12", plan, throttle.EventHubMaxBatch)
	}
}

func equalSettings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
