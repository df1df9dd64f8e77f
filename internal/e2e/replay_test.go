package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestNothingIsLostFromBeforeTheFirstFailure is the promise with the
// host's default behaviour, on the real clock: a failed batch is not
// tried again and the trigger checkpoints past it. The downstream store
// goes offline; batches fail and are skipped until the circuit trips;
// the mail's link opens the resume page, which says how many events the
// failures skipped; the recipient resumes from before the first failure;
// the host runs them again, and its ledger shows no event of the whole
// run that was never processed.
func TestNothingIsLostFromBeforeTheFirstFailure(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartWith(t, smtp.Env(), apptest.Options{RealClock: true, ReplayQuiet: 2 * time.Second})
	dir := t.TempDir()
	settings := filepath.Join(dir, "local.settings.json")
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	d := wireDemoHub(t, srv)
	bc, tag, hub, app, stream, rep := d.blob, d.tag, d.hub, d.app, d.stream, d.rep
	ledger, err := demo.OpenLedger(filepath.Join(dir, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ledger.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	offline := filepath.Join(dir, "downstream-offline")
	local := runLocalHost(t, ctx, settings, func() *demo.Host {
		// No retry policy: the host's default.
		return &demo.Host{Settings: settings, Function: "ProcessOrders", Blob: bc, HostID: app.HostID, Namespace: tag + ".servicebus.windows.net",
			EventHub: hub, Group: "$default", Partitions: 2, Rate: 20, Epoch: stream.Epoch, Batch: 50, Offline: offline, Reporter: rep, Ledger: ledger}
	}, 100*time.Millisecond)
	host := local.host
	waitUntil := func(what string, limit time.Duration, ok func() bool) {
		t.Helper()
		testenv.Eventually(t, limit, func() (bool, string) { return ok(), "not " + what })
	}
	checkpoints := func() []hostinsight.Checkpoint {
		cps, _, err := hostinsight.NewReader(bc, app.HostID).Checkpoints(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var mine []hostinsight.Checkpoint
		for _, c := range cps {
			if c.Hub == hub {
				mine = append(mine, c)
			}
		}
		return mine
	}
	// Fusebox has sampled where the partitions stood before anything fails.
	waitUntil("sampled while consuming", 30*time.Second, func() bool {
		_, ok, err := srv.App.Store.Replays.Before(t.Context(), demo.AppID, "ProcessOrders", time.Now().Add(-6*time.Second))
		return err == nil && ok && len(checkpoints()) == 2
	})
	if err := os.WriteFile(offline, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := waitState(t, srv, "ProcessOrders", "open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	waitUntil("restarted disabled", 10*time.Second, func() bool { h := host(); return h != nil && h.Disabled() })
	lostBefore := host().Tally().Never
	if lostBefore == 0 {
		t.Fatal("the host checkpointed past no failed event before the trip: nothing to replay")
	}
	mail, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "ProcessOrders is open") && resumeLink(m.Text) != "" && linkEpisode(t, srv, resumeLink(m.Text)) == opened.Episode
	}, 20*time.Second)
	if !ok {
		t.Fatalf("no trip mail within 20 s; got %v", smtp.Messages())
	}
	if err := os.Remove(offline); err != nil { // the store is back
		t.Fatal(err)
	}
	// The host has stopped writing: every checkpoint has stood still for
	// longer than the quiet Fusebox waits for.
	waitUntil("quiet", 20*time.Second, func() bool {
		for _, c := range checkpoints() {
			if time.Since(c.Moved) < 3*time.Second {
				return false
			}
		}
		return true
	})

	p := newPage(t)
	p.do(t, chromedp.Navigate(resumeLink(mail.Text)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="resume-replay"]`)))
	totals := p.text(t, `[data-testid="replay-totals"]`)
	t.Logf("the resume page says: %s", totals)
	if !strings.Contains(totals, "replays about") || !strings.Contains(totals, "Resuming where it stopped skips up to about") {
		t.Errorf("the resume page's replay says %q", totals)
	}
	// What it says would be skipped is the host's own count, within the
	// estimate's slack (the pace of the host's checkpoints).
	shown, err := strconv.ParseInt(p.text(t, `[data-testid="replay-skipped"]`), 10, 64)
	if err != nil || shown < lostBefore/2 || shown > lostBefore*2 {
		t.Errorf("the resume page says %d events would be skipped for good; the host skipped %d", shown, lostBefore)
	}
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="resume-replay"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="replayed"]`)))
	if s := p.text(t, `[data-testid="replayed"]`); !strings.Contains(s, "replayed ") {
		t.Errorf("after resuming, the page says %q", s)
	}
	resumed := time.Now()
	waitState(t, srv, "ProcessOrders", "closed and switched on", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })
	target := stream.Head(resumed)
	waitUntil("caught up", 60*time.Second, func() bool {
		h := host()
		if h == nil || h.Disabled() {
			return false
		}
		for _, c := range checkpoints() {
			if c.Sequence < target {
				return false
			}
		}
		return true
	})
	tally := host().Tally()
	t.Logf("ledger after the catch-up: %d processed once, %d more than once, %d never (%d were skipped before the trip)", tally.Once, tally.More, tally.Never, lostBefore)
	if tally.Never != 0 {
		t.Errorf("%d events up to the checkpoints were never processed after resuming from before the first failure", tally.Never)
	}
	rec, err := srv.App.Store.Replays.Get(t.Context(), demo.AppID, "ProcessOrders", opened.Episode)
	if err != nil {
		t.Fatal(err)
	}
	if replayed, lost, refused := rec.Outcome(); replayed < lostBefore || lost != 0 || len(refused) != 0 {
		t.Errorf("the episode's replay: %d replayed, %d lost, %d refused; want at least the %d skipped, none lost", replayed, lost, len(refused), lostBefore)
	}
	// The episode's record, what goes into the postmortem, says it.
	p.signIn(t, srv.URL, "olivia")
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/ProcessOrders/episodes/"+strconv.FormatInt(opened.Episode, 10)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="episode-events"]`)))
	if s := p.text(t, `[data-testid="episode-events"]`); !strings.Contains(s, "resumed from before the first failure") || !strings.Contains(s, "0 are lost for good") {
		t.Errorf("the episode page says %q", s)
	}
	if md := p.text(t, `[data-testid="episode-markdown"]`); !strings.Contains(md, "**Events**") {
		t.Errorf("the episode's Markdown says nothing of the events:\n%s", md)
	}
}
