package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestAnOperatorBreaksAStuckLock walks the Locks page on the real clock: a
// lock the functions' code took and never let go is listed at once, but
// Break is offered only once Fusebox has seen it held for the configured
// age, when the page, refreshing itself, shows it. The operator confirms,
// the lease is broken in the app's storage, and the audit log says who.
func TestAnOperatorBreaksAStuckLock(t *testing.T) {
	t.Parallel()
	const breakAfter = 3 * time.Second
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_HOST_LOCK_BREAK_AFTER": breakAfter.String()},
		apptest.Options{RealClock: true, HostInsightTTL: time.Millisecond})
	conn := testenv.ConnectionString(t)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, conn, time.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")

	// The lock is taken just before the operator looks. Fusebox can have
	// seen it no earlier than that (its host sampler reads the app's
	// storage too), so Break may not appear before taken + breakAfter.
	taken := time.Now()
	name, blob := testenv.StuckLock(t, hostinsight.HostsContainer, "order-7")
	p.do(t, chromedp.Navigate(srv.URL+"/locks"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="host-locks"]`)))
	looked := time.Since(taken)
	first := p.text(t, `[data-testid="host-locks"]`)
	if !strings.Contains(first, name) {
		t.Fatalf("the stuck lock is not listed:\n%s", first)
	}
	// Other locks may be listed and breakable already: the Locks page lists
	// every leased blob in azure-webjobs-hosts, and tests running beside
	// this one lease their own in the shared test Azurite.
	row := `[data-testid="host-locks"] tr[data-lock="` + demo.AppID + "/" + name + `"]`
	breaks, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+row+` [data-testid="break"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case looked >= breakAfter:
		t.Logf("the page took %s to open: too long to check that Break is held back at first", looked.Round(time.Millisecond))
	case breaks != 0:
		t.Errorf("Break is offered %s after the lock was taken, before it can have been seen held for %s", looked.Round(time.Millisecond), breakAfter)
	}
	// The page refreshes itself every 5 s; the first refresh after the lock
	// has been seen held for breakAfter offers Break.
	p.do(t, chromedp.WaitVisible(chromedp.CSS(row+` [data-testid="break"]`)))
	if offered := time.Since(taken); offered < breakAfter {
		t.Errorf("Break was offered %s after the lock was taken, before %s", offered.Round(time.Millisecond), breakAfter)
	}
	if held := p.text(t, row); !strings.Contains(held, "at least ") {
		t.Errorf("the page does not say how long the lock was seen held:\n%s", held)
	}
	p.do(t,
		chromedp.Click(chromedp.CSS(row+` [data-testid="break"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm-break"]`)),
	)
	if confirm := p.text(t, "main"); !contains(confirm, name, "two instances may then do the same work") {
		t.Errorf("the confirmation does not name the lock and the risk:\n%s", confirm)
	}
	p.do(t,
		chromedp.Click(chromedp.CSS(`[data-testid="confirm-break"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	if loc := p.location(t); !strings.HasSuffix(loc, "/locks") {
		t.Errorf("after Break the browser is at %s, want the Locks page", loc)
	}
	props, err := blob.GetProperties(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.LeaseState == nil || *props.LeaseState != lease.StateTypeBroken {
		t.Errorf("lease state after Break = %v, want broken", props.LeaseState)
	}
	p.do(t, chromedp.Navigate(srv.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="audit"]`)))
	if a := p.text(t, `[data-testid="audit"]`); !contains(a, "olivia", "broke host lock", "order-7") {
		t.Errorf("the audit log lacks the break:\n%s", a)
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}
