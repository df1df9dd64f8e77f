package armwrite_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/fusebox/fusebox/internal/switches/armwrite"
)

func answer(status int, body string) error {
	req, _ := http.NewRequest(http.MethodGet, "https://management.azure.com/subscriptions/s/x", nil)
	h := http.Header{}
	h.Set("x-ms-error-code", "AuthorizationFailed")
	return runtime.NewResponseError(&http.Response{StatusCode: status, Status: http.StatusText(status), Request: req,
		Header: h, Body: io.NopCloser(strings.NewReader(body))})
}

var target = armwrite.Target{Package: "appservice", Name: "func-orders", Scope: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Web/sites/func-orders",
	Grant: "the Website Contributor role", Needs: "Microsoft.Web/sites/config/write", Gone: "was the app deleted?"}

// What ARM answered (its body can carry anything a proxy or the service
// put there) never reaches the error's text; what to do does, and the
// error still classifies for retrying.
func TestDescribeSaysWhatToDoAndNothingTheServerSaid(t *testing.T) {
	const secret = `{"error":{"message":"token eyJsecret leaked <script>"}}`
	for _, tc := range []struct {
		status    int
		want      string
		permanent bool
		retriable bool
	}{
		{http.StatusForbidden, "give it the Website Contributor role on /subscriptions/s/resourceGroups/rg/providers/Microsoft.Web/sites/func-orders (it needs Microsoft.Web/sites/config/write)", true, false},
		{http.StatusUnauthorized, "did not accept Fusebox's credential", true, false},
		{http.StatusNotFound, "func-orders was not found at /subscriptions/s/resourceGroups/rg/providers/Microsoft.Web/sites/func-orders (404 AuthorizationFailed): was the app deleted?", true, false},
		{http.StatusServiceUnavailable, "appservice: read the settings of func-orders: ARM answered 503", false, true},
	} {
		err := target.Describe("read the settings of", answer(tc.status, secret))
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: %q does not say %q", tc.status, err, tc.want)
		}
		if strings.Contains(err.Error(), "eyJsecret") || strings.Contains(err.Error(), "<script>") {
			t.Errorf("%d: the server's body reached the error: %q", tc.status, err)
		}
		if errors.Is(err, armwrite.ErrPermanent) != tc.permanent || armwrite.Retriable(err) != tc.retriable {
			t.Errorf("%d: permanent %v, retriable %v; want %v, %v", tc.status, errors.Is(err, armwrite.ErrPermanent), armwrite.Retriable(err), tc.permanent, tc.retriable)
		}
	}
	if err := target.Describe("write", context.DeadlineExceeded); err.Error() != "appservice: write func-orders: timed out" || !armwrite.Retriable(err) {
		t.Errorf("a time-out: %q, retriable %v", err, armwrite.Retriable(err))
	}
}

// Apply reads again after a busy write instead of replaying it, so what
// another writer changed in between is merged, not overwritten.
func TestApplyMergesAfreshAfterABusyWrite(t *testing.T) {
	store := map[string]string{"keep": "1"}
	writes := 0
	err := armwrite.Apply(t.Context(), armwrite.Policy{Attempts: 3, RetryDelay: 1, MaxRetryDelay: 1}, armwrite.Change[map[string]string]{
		Read: func(context.Context) (map[string]string, error) {
			out := map[string]string{}
			for k, v := range store {
				out[k] = v
			}
			return out, nil
		},
		Merge: func(m map[string]string) (map[string]string, bool, error) {
			if m["off"] == "true" {
				return m, false, nil
			}
			m["off"] = "true"
			return m, true, nil
		},
		Write: func(_ context.Context, m map[string]string) error {
			writes++
			if writes == 1 {
				store["deployed"] = "v2" // someone else writes meanwhile
				return answer(http.StatusConflict, "busy")
			}
			for k := range store {
				delete(store, k)
			}
			for k, v := range m {
				store[k] = v
			}
			return nil
		},
		Holds:    func(m map[string]string) (bool, error) { return m["off"] == "true", nil },
		Replaced: errors.New("replaced"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if writes != 2 || store["deployed"] != "v2" || store["keep"] != "1" || store["off"] != "true" {
		t.Errorf("after %d writes the settings are %v; want the other writer's change kept and off set", writes, store)
	}
}
