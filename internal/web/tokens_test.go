package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
)

// An operator issues a token on the Tokens page: it is shown once, works
// on the API at once, its use is shown, and revoking it stops it at once
// on this instance; the audit log says who did both.
func TestATokenIssuedOnThePageWorksAndStopsWhenRevoked(t *testing.T) {
	t.Parallel()
	srv, _, _ := apiServer(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.post("/tokens", url.Values{"_csrf": {b.csrf("/tokens")}, "name": {"ci-deploy"}, "role": {"operator"}, "team": {"orders"}, "expires_in_days": {"30"}})
	wantStatus(t, page, http.StatusOK)
	m := regexp.MustCompile(`data-testid="issued-token">(fbt_[0-9a-f]{16}\.[A-Za-z0-9_-]+)<`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("the page does not show the issued token:\n%.2000s", page.body)
	}
	token := m[1]
	if again := b.get("/tokens"); strings.Contains(again.body, token) {
		t.Error("the token is shown again after it was issued")
	}
	ci := apiClient{t, newBrowser(t, srv.URL), token}
	wantStatus(t, ci.call(http.MethodGet, "/api/v1/circuits", ""), http.StatusOK)
	wantStatus(t, ci.call(http.MethodPost, "/api/v1/circuits/orders-demo/ProcessOrders/trip", `{"reason": "deploy"}`), http.StatusOK) // an operator's token acts
	var list struct {
		Tokens []struct {
			ID, Name, Role, Team, State, Token string
			CreatedBy                          string     `json:"created_by"`
			LastUsed                           *time.Time `json:"last_used_at"`
		}
	}
	res := ci.call(http.MethodGet, "/api/v1/tokens", "")
	if err := json.Unmarshal([]byte(res.body), &list); err != nil || len(list.Tokens) != 1 {
		t.Fatalf("%v: %s", err, res.body)
	}
	got := list.Tokens[0]
	if got.Name != "ci-deploy" || got.Role != "operator" || got.Team != "orders" || got.State != "active" || got.CreatedBy != "olivia" || got.LastUsed == nil || got.Token != "" {
		t.Errorf("the list says %+v; want ci-deploy, operator of orders, active, by olivia, used, without the token", got)
	}
	page = b.post("/tokens/"+got.ID+"/revoke", url.Values{"_csrf": {b.csrf("/tokens")}})
	if page.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", page.StatusCode)
	}
	if res := ci.call(http.MethodGet, "/api/v1/circuits", ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the revoked token still answers %d", res.StatusCode)
	}
	if shown := b.get("/tokens").body; !strings.Contains(shown, `data-testid="token-state">revoked<`) {
		t.Error("the page does not show the token revoked")
	}
	audit := b.get("/audit").body
	if !strings.Contains(audit, "issued API token") || !strings.Contains(audit, "revoked API token") {
		t.Error("the audit log does not say who issued and revoked the token")
	}
}

// What a token may be issued with: never a role above the issuer's, a
// life of 1 to 365 days, ending before the issuing token does; a made-up
// or malformed id costs no read and answers as unknown.
func TestATokenIsIssuedOnlyWithinWhatItsIssuerMay(t *testing.T) {
	t.Parallel()
	srv, op, _ := apiServer(t)
	res := op.call(http.MethodPost, "/api/v1/tokens", `{"name": "nightly", "role": "viewer", "expires_in_days": 2}`)
	wantStatus(t, res, http.StatusCreated)
	var viewer struct{ Token, ID string }
	if err := json.Unmarshal([]byte(res.body), &viewer); err != nil || viewer.Token == "" {
		t.Fatalf("%v: %s", err, res.body)
	}
	vt := apiClient{t, newBrowser(t, srv.URL), viewer.Token}
	wantStatus(t, vt.call(http.MethodGet, "/api/v1/circuits", ""), http.StatusOK)
	wantStatus(t, vt.call(http.MethodPost, "/api/v1/tokens", `{"name": "escalate", "role": "operator"}`), http.StatusForbidden)
	for body, field := range map[string]string{
		`{"name": "", "role": "viewer"}`:                          "name",
		`{"name": "x", "role": "admin", "team": "orders"}`:        "role",
		`{"name": "x", "role": "viewer", "team": "no-such-team"}`: "team",
		`{"name": "x", "role": "viewer", "expires_in_days": 400}`: "expires_in_days",
		`{"name": "a\nb", "role": "viewer"}`:                      "name",
	} {
		res := op.call(http.MethodPost, "/api/v1/tokens", body)
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(res.body, `"`+field+`"`) {
			t.Errorf("%s: %d %s; want 422 naming %s", body, res.StatusCode, res.body, field)
		}
	}
	// The viewer token's own expiry bounds what it could issue; expired,
	// it answers as unknown.
	srv.Clock.Advance(49 * time.Hour)
	if res := vt.call(http.MethodGet, "/api/v1/circuits", ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("an expired token answers %d", res.StatusCode)
	}
	for _, made := range []string{"fbt_0123456789abcdef.secret", "fbt_" + viewer.ID + ".not-its-secret", "fbt_zz.x"} {
		if res := (apiClient{t, newBrowser(t, srv.URL), made}).call(http.MethodGet, "/api/v1/circuits", ""); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("made-up token %q answers %d", made, res.StatusCode)
		}
	}
	wantStatus(t, op.call(http.MethodDelete, "/api/v1/tokens/0123456789abcdef", ""), http.StatusNotFound)
}

func TestAnIssuedTokenIsTellableFromAConfiguredOne(t *testing.T) {
	_, issued, _ := auth.NewIssuedToken()
	configured, _ := auth.NewAPIToken()
	if _, ok := auth.IssuedID(issued); !ok {
		t.Errorf("%q is not read as an issued token", issued)
	}
	for range 200 { // a configured token's base64url never holds a dot
		if _, ok := auth.IssuedID(configured); ok {
			t.Fatalf("the configured token %q reads as an issued one", configured)
		}
		configured, _ = auth.NewAPIToken()
	}
}
