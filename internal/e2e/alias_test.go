package e2e_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

// TestABorrowedFileIsRefused is the review's alias
// attempt, in Chromium on the real clock: billing's operator registers an
// app of billing naming orders' local.settings.json, as the Register form
// offers. Fusebox refuses it, saying the file belongs to another app, and
// orders' file is as it was.
func TestABorrowedFileIsRefused(t *testing.T) {
	t.Parallel()
	srv := apptest.StartRealClock(t, map[string]string{"FUSEBOX_LOCAL_USERS": apptest.User(t, "bianca", "operator@billing")})
	ordersFile := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, ordersFile, time.Now()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(ordersFile)
	if err != nil {
		t.Fatal(err)
	}

	p := newPage(t)
	p.signIn(t, srv.URL, "bianca")
	p.do(t,
		chromedp.Navigate(srv.URL+"/apps/new"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="register"]`)),
		chromedp.SendKeys(chromedp.CSS(`#id`), "billing-alias"),
		chromedp.SetValue(chromedp.CSS(`#switch`), "local"),
		chromedp.SendKeys(chromedp.CSS(`#local_settings`), ordersFile),
		chromedp.Click(chromedp.CSS(`[data-testid="register"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error`)),
	)
	if got := p.text(t, `main`); !strings.Contains(got, "another app is registered for this local settings file") || strings.Contains(got, demo.AppID) {
		t.Errorf("the Register form's answer:\n%s", got)
	}
	if _, err := srv.App.Store.Apps.Get(t.Context(), "billing-alias"); err == nil {
		t.Error("billing-alias was registered")
	}
	after, err := os.ReadFile(ordersFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("orders' local.settings.json changed:\n%s", after)
	}
}
