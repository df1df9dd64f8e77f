package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

func TestAnonymousVisitorIsSentToSignIn(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	p := newPage(t)
	p.do(t, chromedp.Navigate(srv.URL+"/jobs"), chromedp.WaitVisible(chromedp.CSS(`form[action="/login"]`)))
	if got, want := p.location(t), srv.URL+"/login?next=%2Fjobs"; got != want {
		t.Errorf("landed on %s, want %s", got, want)
	}
	if h := p.text(t, "h1"); h != "Sign in to Fusebox" {
		t.Errorf("heading %q", h)
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("the sign-in page logged errors: %v", errs)
	}
}

func TestLocalUserSignsInSeesOverviewAndSignsOut(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.do(t,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), "olivia"),
		chromedp.SendKeys(chromedp.CSS("#password"), apptest.Password),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="circuits"]`)),
	)
	if got := p.location(t); got != srv.URL+"/" {
		t.Errorf("after sign-in the browser is at %s", got)
	}
	checks := map[string]string{
		`[data-testid="signed-in-as"]`:    "olivia (admin)",
		`[role="status"]`:                 "You are signed in.",
		`[data-testid="apps-count"]`:      "1",
		`[data-testid="circuits-open"]`:   "1",
		`[data-testid="circuits-closed"]`: "1",
		`[data-testid="jobs-healthy"]`:    "2", // two demo jobs: Fusebox's own loops have their own line
		`[data-testid="jobs-attention"]`:  "1",
		`[data-testid="own-ok"]`:          "None of Fusebox's 13 own loops is late, missing or failing.",
	}
	for sel, want := range checks {
		if got := p.text(t, sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	table := p.text(t, `[data-testid="circuits"]`)
	for _, want := range []string{"SyncInventory", "open", "SendReceipts", "half-open", "ImportPrices", "forced-open"} {
		if !strings.Contains(table, want) {
			t.Errorf("circuits needing attention lack %q:\n%s", want, table)
		}
	}
	// People's jobs come first; Fusebox's own loops sit in their own section.
	if jobs := p.text(t, `main > #overview-body > [data-testid="jobs"]`); strings.Contains(jobs, "Fusebox:") || !strings.Contains(jobs, "Nightly sales summary") {
		t.Errorf("the overview's jobs table should hold people's jobs only:\n%s", jobs)
	}
	if strings.Contains(table, "ProcessOrders") {
		t.Errorf("the closed, quiet ProcessOrders is listed as needing attention:\n%s", table)
	}

	p.do(t,
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/login"]`)),
	)
	if got := p.text(t, `[role="status"]`); got != "You are signed out." {
		t.Errorf("after sign-out the page says %q", got)
	}
	// The overview is closed again.
	p.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`form[action="/login"]`)))
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors (a CSP violation would show here): %v", errs)
	}
}

func TestWrongPasswordStaysOnSignIn(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	p := newPage(t)
	p.do(t,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), "olivia"),
		chromedp.SendKeys(chromedp.CSS("#password"), "wrong password"),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="alert"]`)),
	)
	if got := p.text(t, `[role="alert"]`); got != "the user name or password is not right" {
		t.Errorf("alert says %q", got)
	}
}
