package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/auth/oidctest"
	"github.com/fusebox/fusebox/internal/clock"
)

const callback = "http://fusebox.test/auth/oidc/callback"

var stateKey = []byte("0123456789abcdef0123456789abcdef")

func newOIDC(t *testing.T, secret string) (*auth.OIDC, *oidctest.Provider, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Now())
	p := oidctest.Start(t, callback, clk.Now)
	if secret == "" {
		secret = p.ClientSecret
	}
	roles := auth.NewRoleMapper("roles", nil, []string{"Fusebox.Operator"}, []string{"Fusebox.Viewer", "group-viewers"})
	roles.TeamClaim = "groups"
	o, err := auth.NewOIDC(t.Context(), auth.OIDCSettings{
		Issuer: p.URL, ClientID: p.ClientID, ClientSecret: secret, RedirectURL: callback,
		Roles:    roles,
		StateKey: stateKey, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return o, p, clk
}

// authorize follows the browser's first hop: to the provider, which
// redirects back to the callback with a code and the state.
func authorize(t *testing.T, authURL string) (state, code string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("provider answered %d, want a redirect", resp.StatusCode)
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(back.String(), callback) {
		t.Fatalf("provider redirected to %q, want the callback", resp.Header.Get("Location"))
	}
	return back.Query().Get("state"), back.Query().Get("code")
}

func TestOIDCSignsInAndMapsRoles(t *testing.T) {
	tests := []struct {
		name   string
		claims map[string]any
		want   auth.Role
		kept   []string // the claim values the session keeps, for teams
	}{
		{"app role operator", map[string]any{"roles": []any{"Fusebox.Operator"}}, auth.RoleOperator, []string{"Fusebox.Operator"}},
		{"app role viewer as a string", map[string]any{"roles": "Fusebox.Viewer"}, auth.RoleViewer, []string{"Fusebox.Viewer"}},
		{"operator wins over viewer", map[string]any{"roles": []any{"Fusebox.Viewer", "Fusebox.Operator"}}, auth.RoleOperator, []string{"Fusebox.Viewer", "Fusebox.Operator"}},
		// No role on every app: signed in all the same, with the groups a
		// team may name (teams.Apply).
		{"no role, groups kept", map[string]any{"roles": []any{"Other"}, "groups": []any{"6a1f0c2e-billing", "6a1f0c2e-billing"}}, auth.RoleNone, []string{"Other", "6a1f0c2e-billing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, p, _ := newOIDC(t, "")
			p.SetUser(oidctest.User{Subject: "u-1", Name: "Ada Lovelace", Email: "ada@example.com", Claims: tt.claims})
			authURL, flow := o.Begin("/circuits?app=x")
			state, code := authorize(t, authURL)
			got, next, err := o.Finish(t.Context(), flow, state, code)
			if err != nil {
				t.Fatal(err)
			}
			want := auth.Principal{Subject: "u-1", Name: "Ada Lovelace", Email: "ada@example.com", Role: tt.want, Provider: "oidc", Claims: tt.kept}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("principal = %+v, want %+v", got, want)
			}
			if next != "/circuits?app=x" {
				t.Errorf("next = %q, want the page the person asked for", next)
			}
		})
	}
}

func TestOIDCRefusals(t *testing.T) {
	operator := oidctest.User{Subject: "u-1", Name: "Ada", Claims: map[string]any{"roles": []any{"Fusebox.Operator"}}}
	tests := []struct {
		name    string
		secret  string
		user    oidctest.User
		tamper  func(flow, state, code string, clock *clock.Fake) (string, string, string)
		wantErr error  // errors.Is target, when set
		wantMsg string // substring, when set
	}{
		{name: "wrong client secret", secret: "not-the-secret", user: operator, wantMsg: "FUSEBOX_OIDC_CLIENT_SECRET"},
		{name: "state from another sign-in", user: operator, wantErr: auth.ErrFlow,
			tamper: func(f, s, c string, _ *clock.Fake) (string, string, string) { return f, "forged-state", c }},
		{name: "tampered flow cookie", user: operator, wantErr: auth.ErrFlow,
			tamper: func(f, s, c string, _ *clock.Fake) (string, string, string) { return "x" + f, s, c }},
		{name: "no flow cookie", user: operator, wantErr: auth.ErrFlow,
			tamper: func(f, s, c string, _ *clock.Fake) (string, string, string) { return "", s, c }},
		{name: "flow older than its lifetime", user: operator, wantErr: auth.ErrFlow,
			tamper: func(f, s, c string, clk *clock.Fake) (string, string, string) {
				clk.Advance(auth.FlowLifetime + time.Second)
				return f, s, c
			}},
		{name: "forged code", user: operator, wantMsg: "refused the sign-in code",
			tamper: func(f, s, c string, _ *clock.Fake) (string, string, string) { return f, s, "made-up" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, p, clk := newOIDC(t, tt.secret)
			p.SetUser(tt.user)
			authURL, flow := o.Begin("/")
			state, code := authorize(t, authURL)
			if tt.tamper != nil {
				flow, state, code = tt.tamper(flow, state, code, clk)
			}
			_, _, err := o.Finish(t.Context(), flow, state, code)
			if err == nil {
				t.Fatal("sign-in succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
		})
	}
}

func TestOIDCCodeCannotBeReplayed(t *testing.T) {
	o, p, _ := newOIDC(t, "")
	p.SetUser(oidctest.User{Subject: "u-1", Name: "Ada", Claims: map[string]any{"roles": "Fusebox.Operator"}})
	authURL, flow := o.Begin("/")
	state, code := authorize(t, authURL)
	if _, _, err := o.Finish(t.Context(), flow, state, code); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Finish(t.Context(), flow, state, code); err == nil {
		t.Error("the same code signed in twice")
	}
}

func TestOIDCBadIssuerFailsAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p := oidctest.Start(t, callback, time.Now)
	for _, issuer := range []string{p.URL + "/wrong-tenant", "http://127.0.0.1:1"} {
		_, err := auth.NewOIDC(ctx, auth.OIDCSettings{Issuer: issuer, ClientID: "x", ClientSecret: "y", RedirectURL: callback, StateKey: stateKey, Now: time.Now})
		if err == nil || !strings.Contains(err.Error(), "FUSEBOX_OIDC_ISSUER") {
			t.Errorf("issuer %s: got %v, want an error naming FUSEBOX_OIDC_ISSUER", issuer, err)
		}
	}
}
