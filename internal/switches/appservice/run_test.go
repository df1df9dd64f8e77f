package appservice_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
)

// TestRunCallsTheAdminAPIWithTheMasterKey runs a function the way "Run
// now" does: host name and master key from ARM (the SDK's fake server), the
// call to a Functions host (an in-process HTTPS server).
func TestRunCallsTheAdminAPIWithTheMasterKey(t *testing.T) {
	var calls atomic.Int32
	host := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/admin/functions/NightlySalesSummary":
			http.Error(w, "wrong call "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		case r.Header.Get("x-functions-key") != "master-key-of-staging":
			http.Error(w, "wrong key", http.StatusUnauthorized)
		case strings.ReplaceAll(string(body), " ", "") != `{"input":""}`:
			http.Error(w, "wrong body", http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer host.Close()
	hostName := strings.TrimPrefix(host.URL, "https://")
	srv := &fake.WebAppsServer{
		GetSlot: func(_ context.Context, rg, name, slot string, _ *armappservice.WebAppsClientGetSlotOptions) (azfake.Responder[armappservice.WebAppsClientGetSlotResponse], azfake.ErrorResponder) {
			var r azfake.Responder[armappservice.WebAppsClientGetSlotResponse]
			r.SetResponse(http.StatusOK, armappservice.WebAppsClientGetSlotResponse{Site: armappservice.Site{Properties: &armappservice.SiteProperties{DefaultHostName: to.Ptr(hostName)}}}, nil)
			return r, azfake.ErrorResponder{}
		},
		ListHostKeysSlot: func(_ context.Context, rg, name, slot string, _ *armappservice.WebAppsClientListHostKeysSlotOptions) (azfake.Responder[armappservice.WebAppsClientListHostKeysSlotResponse], azfake.ErrorResponder) {
			var r azfake.Responder[armappservice.WebAppsClientListHostKeysSlotResponse]
			r.SetResponse(http.StatusOK, armappservice.WebAppsClientListHostKeysSlotResponse{HostKeys: armappservice.HostKeys{MasterKey: to.Ptr("master-key-of-" + slot)}}, nil)
			return r, azfake.ErrorResponder{}
		},
	}
	sw := appservice.New(&azfake.TokenCredential{}, appservice.Settings{Policy: armwrite.Policy{RetryDelay: time.Millisecond}, Transport: fake.NewWebAppsServerTransport(srv), HTTPClient: host.Client()})
	staging := app
	staging.Slot = "staging"
	if err := sw.Run(t.Context(), staging, "NightlySalesSummary"); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("the host was called %d times", calls.Load())
	}
	// The host's answer is not repeated: it can carry anything.
	err := sw.Run(t.Context(), staging, "NoSuchFunction")
	if err == nil || !strings.Contains(err.Error(), "answered 404") || strings.Contains(err.Error(), "wrong call") {
		t.Errorf("a refused run: %v; want the status without the host's body", err)
	}
}

// TestRunNeverTakesTheMasterKeyAlongARedirect: a host (or whatever answers
// at its name) that redirects the admin call elsewhere gets an error, and
// the place it points to never sees the request or the key.
func TestRunNeverTakesTheMasterKeyAlongARedirect(t *testing.T) {
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
	}))
	defer elsewhere.Close()
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer host.Close()
	err := appservice.PostAdmin(t.Context(), host.Client(), host.URL, "ProcessOrders", "master-key")
	if err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("a redirected admin call answered %v, want the host's 307 as an error", err)
	}
	if leaked.Load() != 0 {
		t.Error("the redirect was followed: the master key went to another server")
	}
}
