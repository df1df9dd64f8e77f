package e2e_test

import (
	"strings"
	"testing"
	"time"

	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"
	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestATeamSeesAndSwitchesOnlyItsOwnApps walks #56's journey in Chromium
// on the real clock, ARM being the SDK's fake server: an admin guards the
// app Discover found into team billing; billing's operator signs in, sees
// that app's circuits and nothing of orders-demo (orders' app), finds
// orders' circuit answered as a page that does not exist, and trips
// billing's own circuit, which switches its trigger off through ARM.
func TestATeamSeesAndSwitchesOnlyItsOwnApps(t *testing.T) {
	t.Parallel()
	const sub = "00000000-0000-4000-8000-0000000000e6"
	arm, appSettings := apptest.GuardableARM(sub)
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": sub,
		"FUSEBOX_LOCAL_USERS": apptest.User(t, "olivia", "admin") + "," + apptest.User(t, "bianca", "operator@billing"),
		"FUSEBOX_TEAM_SCOPES": "billing:/subscriptions/" + sub + "/resourceGroups/rg-orders"},
		apptest.Options{RealClock: true, ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}

	admin := newPage(t)
	admin.signIn(t, srv.URL, "olivia")
	admin.do(t,
		chromedp.Navigate(srv.URL+"/apps/discover"),
		chromedp.Click(chromedp.CSS(`[data-testid="guard"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="guard-confirm"]`)),
		chromedp.SetValue(chromedp.CSS(`select[name="team"]`), "billing"),
		chromedp.Click(chromedp.CSS(`[data-testid="guard-confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="app-key"]`)),
	)
	apps, err := srv.App.Store.Apps.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	guarded := ""
	for _, a := range apps {
		if a.ID != demo.AppID {
			guarded = a.ID
			if a.Team != "billing" {
				t.Fatalf("the guarded app %s is in team %q, want billing", a.ID, a.Team)
			}
		}
	}

	p := newPage(t)
	p.signIn(t, srv.URL, "bianca")
	if got := p.text(t, `[data-testid="signed-in-as"]`); got != "bianca (operator of billing)" {
		t.Errorf("signed in as %q", got)
	}
	p.do(t, chromedp.Navigate(srv.URL+"/circuits"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="circuits"]`)))
	list := p.text(t, `main`)
	if !strings.Contains(list, "ProcessOrders") || strings.Contains(list, "SyncInventory") || strings.Contains(list, "Orders (demo)") {
		t.Errorf("billing's circuits page:\n%s", list)
	}
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/SyncInventory"), chromedp.WaitVisible(chromedp.CSS(`main`)))
	if got := p.text(t, `main`); !strings.Contains(got, "There is no page here.") || strings.Contains(got, "SyncInventory") {
		t.Errorf("orders' circuit, opened by billing:\n%s", got)
	}
	p.do(t,
		chromedp.Navigate(srv.URL+"/circuits/"+guarded+"/ProcessOrders"),
		chromedp.Click(chromedp.CSS(`[data-testid="trip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.SendKeys(chromedp.CSS(`[name="reason"]`), "billing's store is down"),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="signed-in-as"]`)),
	)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		return appSettings.Get()["AzureWebJobs.ProcessOrders.Disabled"] == "true", "billing's trip did not switch ProcessOrders off through ARM"
	})
}
