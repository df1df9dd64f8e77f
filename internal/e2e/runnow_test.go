package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestRunNowMakesUpAMissedSlot opens the nightly job's page, presses "Run
// now" beside the missed night, and checks that the function host (an
// in-process server standing in for Core Tools) was asked to run it.
func TestRunNowMakesUpAMissedSlot(t *testing.T) {
	t.Parallel()
	srv, p, settings := signedIn(t, "olivia")
	calls, _ := standInHost(t, settings)

	p.do(t,
		chromedp.Navigate(srv.URL+"/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-now"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="run-now"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	if got := p.text(t, `[role="status"]`); !strings.HasPrefix(got, "The function was started") {
		t.Errorf("flash says %q", got)
	}
	if called := calls(); len(called) != 1 || called[0] != "POST /admin/functions/NightlySalesSummary" {
		t.Errorf("the host got %v", called)
	}
	entries, err := srv.App.Store.Audit.Recent(t.Context(), srv.Clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Action == "ran job now" && e.Actor == "olivia" && strings.Contains(e.Detail, "for the slot of 2026-") {
			found = true
		}
	}
	if !found {
		t.Errorf("no audit entry of the run: %+v", entries)
	}
}
