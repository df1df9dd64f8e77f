package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth/oidctest"
)

func TestSingleSignOnThroughTheProvider(t *testing.T) {
	t.Parallel()
	var srv *apptest.Server
	provider := oidctest.Start(t, "", func() time.Time { return srv.Clock.Now() })
	provider.SetUser(oidctest.User{Subject: "u-42", Name: "Ada Lovelace", Email: "ada@example.com",
		Claims: map[string]any{"roles": []any{"Fusebox.Viewer"}}})
	srv = apptest.Start(t, map[string]string{
		"FUSEBOX_OIDC_ISSUER": provider.URL, "FUSEBOX_OIDC_CLIENT_ID": provider.ClientID,
		"FUSEBOX_OIDC_CLIENT_SECRET": provider.ClientSecret, "FUSEBOX_OIDC_DISPLAY_NAME": "Contoso ID",
		"FUSEBOX_VIEWER_CLAIM_VALUES": "Fusebox.Viewer",
	})
	provider.SetRedirectURI(srv.URL + "/auth/oidc/callback")

	p := newPage(t)
	p.do(t,
		chromedp.Navigate(srv.URL+"/audit"),
		chromedp.WaitVisible(chromedp.CSS(`a[href^="/auth/oidc/login"]`)),
	)
	if got := p.text(t, `a[href^="/auth/oidc/login"]`); got != "Sign in with Contoso ID" {
		t.Errorf("the single sign-on button reads %q", got)
	}
	p.do(t,
		chromedp.Click(chromedp.CSS(`a[href^="/auth/oidc/login"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="signed-in-as"]`)),
	)
	if got, want := p.location(t), srv.URL+"/audit"; got != want {
		t.Errorf("after signing in the browser is at %s, want the page it asked for, %s", got, want)
	}
	if got := p.text(t, `[data-testid="signed-in-as"]`); got != "Ada Lovelace (viewer)" {
		t.Errorf("signed in as %q", got)
	}
	if got := p.text(t, `[data-testid="audit"]`); !contains(got, "Ada Lovelace", "signed in", "via oidc as viewer") {
		t.Errorf("the audit log does not record the sign-in:\n%s", got)
	}
}
