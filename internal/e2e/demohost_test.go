package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestNothingIsLost runs the demo host against Fusebox on the real clock,
// reporting through OpenTelemetry alone:
// events flow; the downstream store goes offline and every batch fails; the
// circuit trips and the host, restarted with its trigger disabled, stops
// consuming, so its checkpoints stay put while events keep arriving;
// the store comes back, an operator resumes, the host catches up — and
// every sequence number of every partition up to the end was processed.
func TestNothingIsLost(t *testing.T) {
	t.Parallel()
	// The pages keep a host snapshot for the default 15 s, but never one
	// read before the circuit's last switch: the page after the resume
	// below must show the catch-up, not the snapshot read while it was off.
	srv := apptest.StartRealClock(t, nil)
	dir := t.TempDir()
	settings := filepath.Join(dir, "local.settings.json")
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	d := wireDemoHub(t, srv)
	bc, tag, hub, app, stream, rep := d.blob, d.tag, d.hub, d.app, d.stream, d.rep
	epoch := stream.Epoch
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var mu sync.Mutex
	seen := map[int]map[int64]bool{}
	offline := filepath.Join(dir, "downstream-offline")
	newHost := func() *demo.Host {
		return &demo.Host{Settings: settings, Function: "ProcessOrders", Blob: bc, HostID: app.HostID, Namespace: tag + ".servicebus.windows.net",
			EventHub: hub, Group: "$default", Partitions: 2, Rate: 20, Epoch: epoch, Batch: 50, Offline: offline, Reporter: rep, Retries: demo.RetryForever,
			Processed: func(p int, seq int64) {
				mu.Lock()
				defer mu.Unlock()
				if seen[p] == nil {
					seen[p] = map[int64]bool{}
				}
				seen[p][seq] = true
			}}
	}
	// What `fusebox local-host` does: restart the host when its Disabled
	// setting changes (the supervisor is tested on its own in
	// internal/hostsupervisor).
	local := runLocalHost(t, ctx, settings, newHost, 100*time.Millisecond)
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
		testenv.Eventually(t, limit, func() (bool, string) { return ok(), "not " + what })
	}
	checkpoints := func() map[string]int64 {
		cps, _, err := hostinsight.NewReader(bc, app.HostID).Checkpoints(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, c := range cps {
			if c.Hub == hub {
				out[c.Partition] = c.Sequence
			}
		}
		return out
	}

	waitUntil("consuming", 10*time.Second, func() bool { return len(checkpoints()) == 2 })
	if err := os.WriteFile(offline, nil, 0o644); err != nil { // the downstream store goes offline
		t.Fatal(err)
	}
	waitUntil("tripped and switched off", 30*time.Second, func() bool { c := circuitNow(); return c.State == circuit.Open && !c.Pending() })
	waitUntil("restarted disabled", 10*time.Second, func() bool { h := host(); return h != nil && h.Disabled() })
	frozen := checkpoints()
	testenv.Consistently(t, time.Second, func() (bool, string) { // events keep arriving while the trigger is off: a second of them wait
		after := checkpoints()
		return after["0"] == frozen["0"] && after["1"] == frozen["1"], fmt.Sprintf("checkpoints moved while the trigger was off: %v then %v", frozen, after)
	})

	// The store is back; the operator reads the circuit page and resumes.
	if err := os.Remove(offline); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	p.do(t,
		chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume-summary"]`)),
	)
	shown := p.text(t, `[data-testid="resume-summary"]`)
	if !strings.Contains(shown, "unmoved since the trip") {
		t.Errorf("the circuit page says %q", shown)
	}
	// The page counts what the hub held when its snapshot was read, behind
	// the frozen checkpoints. The snapshot may be up to 15 s old, but never
	// older than the switch: the count lies between what the hub held when
	// the trigger went off and what it holds now.
	waitedOff := int64(-1)
	if _, after, ok := strings.Cut(shown, "About "); ok {
		waitedOff, _ = strconv.ParseInt(strings.Fields(after)[0], 10, 64)
	}
	lo := 2*stream.Head(circuitNow().SwitchedAt()) - frozen["0"] - frozen["1"]
	if hi := 2*stream.Head(time.Now()) - frozen["0"] - frozen["1"]; waitedOff < lo || waitedOff > hi {
		t.Errorf("the circuit page says %q: want about %d to %d events waiting", shown, lo, hi)
	}
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm"]`)))
	// The confirmation says it again, where the operator decides.
	if s := p.text(t, `[data-testid="resume-summary"]`); !strings.Contains(s, "events waiting") {
		t.Errorf("the resume confirmation says %q", s)
	}
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="confirm"]`)), chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)))
	resumed := time.Now()
	target := host().Head(resumed)
	waitUntil("caught up", 30*time.Second, func() bool {
		h := host()
		if h == nil || h.Disabled() {
			return false
		}
		cps := checkpoints()
		return cps["0"] >= target && cps["1"] >= target
	})
	caughtUp := time.Since(resumed)
	// Now the page shows fewer waiting than while the trigger was off,
	// once the host insight it read right after the resume (kept up to
	// 15 s, hostinsight's TTL) is read again: reloaded as a person would.
	var waitingOn int64
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkpoints"]`)))
		waitingOn = 0
		for _, w := range strings.Fields(waitingCells(t, p)) {
			n, err := strconv.ParseInt(w, 10, 64)
			if err != nil {
				t.Fatalf("a waiting cell says %q", w)
			}
			waitingOn += n
		}
		return waitingOn < waitedOff, fmt.Sprintf("after catching up the page shows %d events waiting, no fewer than the %d while the trigger was off", waitingOn, waitedOff)
	})
	if table := p.text(t, `[data-testid="checkpoints"]`); !strings.Contains(table, "demo-host-") {
		t.Errorf("the checkpoints do not name the host that owns their partitions: %q", table)
	}
	t.Logf("caught up %s after the resume (%d events waited per partition; the page said %d in all while off, %d after); %d host starts",
		caughtUp.Round(time.Millisecond), target-frozen["0"], waitedOff, waitingOn, len(local.starts()))
	cancel()
	mu.Lock()
	defer mu.Unlock()
	for part := range 2 {
		for seq := int64(0); seq <= target; seq++ {
			if !seen[part][seq] {
				t.Fatalf("partition %d: sequence %d was never processed", part, seq)
			}
		}
	}
}
