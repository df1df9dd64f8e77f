package faulttest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A team's token issued on one instance works on another, and once
// revoked on the first the second refuses it within auth.IssuedTokenTTL,
// on the real clock, each instance its own process.
func TestARevokedTokenIsRefusedOnAnotherInstanceWithinItsBound(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ins := r.start(2)
	call := func(base, token, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := call(ins[0].URL, r.token, http.MethodPost, "/api/v1/tokens", `{"name": "ci-deploy", "role": "viewer", "team": "billing", "expires_in_days": 1}`)
	if status != http.StatusCreated {
		t.Fatalf("issue: %d %s", status, body)
	}
	var issued struct{ ID, Token string }
	if err := json.Unmarshal([]byte(body), &issued); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, auth.IssuedTokenTTL+5*time.Second, func() (bool, string) { // the other instance's list may be a TTL old
		status, _ := call(ins[1].URL, issued.Token, http.MethodGet, "/api/v1/circuits", "")
		return status == http.StatusOK, "the other instance does not take the new token"
	})
	if status, body := call(ins[0].URL, r.token, http.MethodDelete, "/api/v1/tokens/"+issued.ID, ""); status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", status, body)
	}
	revoked := time.Now()
	if status, _ := call(ins[0].URL, issued.Token, http.MethodGet, "/api/v1/circuits", ""); status != http.StatusUnauthorized {
		t.Errorf("the instance that revoked it answers %d", status)
	}
	testenv.Eventually(t, auth.IssuedTokenTTL+5*time.Second, func() (bool, string) {
		status, _ := call(ins[1].URL, issued.Token, http.MethodGet, "/api/v1/circuits", "")
		return status == http.StatusUnauthorized, "the other instance still takes the revoked token"
	})
	took := time.Since(revoked)
	t.Logf("refused on the other instance %s after the revoke (bound %s)", took.Round(time.Millisecond), auth.IssuedTokenTTL)
	if took > auth.IssuedTokenTTL+3*time.Second {
		t.Errorf("refused %s after the revoke; the bound is %s", took, auth.IssuedTokenTTL)
	}
}
