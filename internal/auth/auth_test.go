package auth_test

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

func TestLocalUsers(t *testing.T) {
	hash, err := auth.HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	users := auth.NewLocalUsers([]auth.LocalUser{{Name: "Alice", Role: auth.RoleNone, Teams: map[string]auth.Role{"billing": auth.RoleOperator}, PasswordHash: []byte(hash)}})
	tests := []struct {
		name, user, password string
		wantErr              bool
	}{
		{"right password", "Alice", "correct horse", false},
		{"name in another case", " alice ", "correct horse", false},
		{"wrong password", "Alice", "correct horsE", true},
		{"unknown user", "Mallory", "correct horse", true},
		{"empty password", "Alice", "", true},
		{"longer than bcrypt reads", "Alice", "correct horse" + strings.Repeat("x", 80), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := users.Authenticate(tt.user, tt.password)
			if tt.wantErr {
				if !errors.Is(err, auth.ErrBadCredentials) {
					t.Errorf("got %+v, %v; want ErrBadCredentials", p, err)
				}
				return
			}
			want := auth.Principal{Subject: "local:Alice", Name: "Alice", Teams: map[string]auth.Role{"billing": auth.RoleOperator}, Provider: "local"}
			if err != nil || !reflect.DeepEqual(p, want) {
				t.Errorf("got %+v, %v; want %+v", p, err, want)
			}
		})
	}
}

func TestRolesAllow(t *testing.T) {
	tests := []struct {
		have, need auth.Role
		want       bool
	}{
		{auth.RoleOperator, auth.RoleViewer, true},
		{auth.RoleOperator, auth.RoleOperator, true},
		{auth.RoleViewer, auth.RoleViewer, true},
		{auth.RoleViewer, auth.RoleOperator, false},
		{auth.RoleNone, auth.RoleViewer, false},
		{auth.RoleOperator, auth.RoleNone, false},
	}
	for _, tt := range tests {
		if got := tt.have.Allows(tt.need); got != tt.want {
			t.Errorf("%v.Allows(%v) = %v, want %v", tt.have, tt.need, got, tt.want)
		}
	}
}

func TestSessionsLiveInStorageAndEnd(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableSessions); err != nil {
		t.Fatal(err)
	}
	store := storage.New(svc)
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	sessions, err := auth.NewSessions(store.Sessions, []byte("0123456789abcdef0123456789abcdef"), 12*time.Hour, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	ada := auth.Principal{Subject: "u-1", Name: "Ada", Email: "ada@example.com", Role: auth.RoleViewer, Provider: "oidc"}
	cookie, expires, err := sessions.Start(t.Context(), ada)
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(12 * time.Hour); !expires.Equal(want) {
		t.Errorf("expires %v, want %v", expires, want)
	}
	got, err := sessions.Lookup(t.Context(), cookie)
	if err != nil || !reflect.DeepEqual(got.Principal, ada) {
		t.Fatalf("Lookup = %+v, %v; want %+v", got.Principal, err, ada)
	}

	// The table never holds the token itself.
	token := cookie[:strings.LastIndexByte(cookie, '.')]
	rows, err := tablestore.All[tablestore.Meta](t.Context(), svc.Table(storage.TableSessions), tablestore.Query{})
	if err != nil || len(rows) != 1 {
		t.Fatalf("sessions table: %d rows, %v", len(rows), err)
	}
	if strings.Contains(rows[0].RowKey, token) || strings.Contains(rows[0].PartitionKey+rows[0].RowKey, token) {
		t.Error("the session token is stored in clear")
	}

	flip := func(c byte) string {
		if c == 'A' {
			return "B"
		}
		return "A"
	}
	for name, forged := range map[string]string{
		"tampered token":     flip(cookie[0]) + cookie[1:],
		"tampered signature": cookie[:len(cookie)-2] + flip(cookie[len(cookie)-2]) + flip(cookie[len(cookie)-1]),
		"no signature":       token,
		"empty":              "",
		"not base64":         "!!!.!!!",
	} {
		if _, err := sessions.Lookup(t.Context(), forged); !errors.Is(err, auth.ErrNoSession) {
			t.Errorf("%s: got %v, want ErrNoSession", name, err)
		}
	}

	clk.Advance(12*time.Hour - time.Nanosecond)
	if _, err := sessions.Lookup(t.Context(), cookie); err != nil {
		t.Errorf("one nanosecond before expiry: %v", err)
	}
	clk.Advance(time.Nanosecond)
	if _, err := sessions.Lookup(t.Context(), cookie); !errors.Is(err, auth.ErrNoSession) {
		t.Errorf("at expiry: got %v, want ErrNoSession", err)
	}
	if n, err := store.Sessions.DeleteExpired(t.Context(), clk.Now().Add(time.Second)); err != nil || n != 1 {
		t.Errorf("DeleteExpired removed %d (err %v), want 1", n, err)
	}

	second, _, err := sessions.Start(t.Context(), ada)
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions.End(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Lookup(t.Context(), second); !errors.Is(err, auth.ErrNoSession) {
		t.Errorf("after End: got %v, want ErrNoSession", err)
	}
	if err := sessions.End(t.Context(), second); err != nil {
		t.Errorf("ending an ended session: %v", err)
	}
}

func TestCSRFTokens(t *testing.T) {
	c, err := auth.NewCSRF([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := auth.NewCSRF([]byte("fedcba9876543210fedcba9876543210"))
	id := c.NewBrowserID()
	tok := c.Token(id)
	tests := []struct {
		name      string
		id, token string
		want      bool
	}{
		{"own token", id, tok, true},
		{"token of another browser", c.NewBrowserID(), tok, false},
		{"token made with another key", id, other.Token(id), false},
		{"truncated", id, tok[:len(tok)-1], false},
		{"empty token", id, "", false},
		{"no browser id", "", tok, false},
		{"another mask of the same token", id, c.Token(id), true},
	}
	if tok == c.Token(id) {
		t.Error("two tokens for one browser are the same bytes: a compressed page would leak them (BREACH)")
	}
	for _, tt := range tests {
		if got := c.Valid(tt.id, tt.token); got != tt.want {
			t.Errorf("%s: Valid = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func principalHeader(json string) string { return base64.StdEncoding.EncodeToString([]byte(json)) }

func TestEasyAuthPrincipal(t *testing.T) {
	roles := auth.NewRoleMapper("roles", nil, []string{"Fusebox.Operator"}, []string{"Fusebox.Viewer"})
	roles.TeamClaim = "groups"
	e := auth.NewEasyAuth(roles)
	tests := []struct {
		name    string
		header  string
		want    auth.Principal
		wantErr error
	}{
		{"operator by app role", principalHeader(`{"auth_typ":"aad","name_typ":"name","role_typ":"roles","claims":[
			{"typ":"http://schemas.microsoft.com/identity/claims/objectidentifier","val":"oid-1"},
			{"typ":"name","val":"Grace Hopper"},{"typ":"preferred_username","val":"grace@example.com"},
			{"typ":"roles","val":"Fusebox.Operator"}]}`),
			auth.Principal{Subject: "oid-1", Name: "Grace Hopper", Email: "grace@example.com", Role: auth.RoleOperator, Provider: "easyauth", Claims: []string{"Fusebox.Operator"}}, nil},
		{"viewer by the provider's role claim type", principalHeader(`{"auth_typ":"aad","role_typ":"http://schemas.microsoft.com/ws/2008/06/identity/claims/role","claims":[
			{"typ":"sub","val":"s-2"},{"typ":"http://schemas.microsoft.com/ws/2008/06/identity/claims/role","val":"Fusebox.Viewer"}]}`),
			auth.Principal{Subject: "s-2", Name: "s-2", Role: auth.RoleViewer, Provider: "easyauth", Claims: []string{"Fusebox.Viewer"}}, nil},
		// No role here, but a team may map its claim values: signed in, it
		// sees what its teams own.
		{"no role, a group", principalHeader(`{"auth_typ":"aad","claims":[{"typ":"sub","val":"s-3"},{"typ":"roles","val":"Other"},{"typ":"groups","val":"g-billing"}]}`),
			auth.Principal{Subject: "s-3", Name: "s-3", Provider: "easyauth", Claims: []string{"Other", "g-billing"}}, nil},
		{"not base64", "%%%", auth.Principal{}, auth.ErrBadPrincipal},
		{"not JSON", principalHeader("hello"), auth.Principal{}, auth.ErrBadPrincipal},
		{"no auth type", principalHeader(`{"claims":[{"typ":"sub","val":"s"},{"typ":"roles","val":"Fusebox.Operator"}]}`), auth.Principal{}, auth.ErrBadPrincipal},
		{"no subject", principalHeader(`{"auth_typ":"aad","claims":[{"typ":"roles","val":"Fusebox.Operator"}]}`), auth.Principal{}, auth.ErrBadPrincipal},
		{"oversized", strings.Repeat("A", 20000), auth.Principal{}, auth.ErrBadPrincipal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Principal(tt.header)
			if !errors.Is(err, tt.wantErr) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestAppKeys(t *testing.T) {
	key, hash := auth.NewAppKey("orders-prod")
	if got := auth.AppOfKey(key); got != "orders-prod" {
		t.Errorf("AppOfKey = %q", got)
	}
	if !auth.AppKeyMatches(key, hash) {
		t.Error("a key does not match its own hash")
	}
	other, _ := auth.NewAppKey("orders-prod")
	for name, k := range map[string]string{"another key of the app": other, "truncated": key[:len(key)-1], "empty": ""} {
		if auth.AppKeyMatches(k, hash) {
			t.Errorf("%s matched", name)
		}
	}
	if auth.AppKeyMatches(key, "") {
		t.Error("a key matched an app without a key")
	}
	for _, k := range []string{"", "fbx_", "fbx_orders", "fbx_orders_", "Bearer fbx_a_b", "xyz_orders_secret"} {
		if got := auth.AppOfKey(k); got != "" {
			t.Errorf("AppOfKey(%q) = %q, want \"\"", k, got)
		}
	}
}
