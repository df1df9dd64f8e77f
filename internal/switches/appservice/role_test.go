package appservice_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
)

// actions records the ARM operation each request is, as RBAC names it:
// the resource types along the path, then read (GET), write (PUT, PATCH),
// delete, or the POST's last segment as an action.
type actions struct {
	next policy.Transporter
	mu   sync.Mutex
	seen map[string]bool
}

func (a *actions) Do(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.seen[actionOf(req.Method, req.URL.Path)] = true
	a.mu.Unlock()
	return a.next.Do(req)
}

func actionOf(method, path string) string {
	_, rest, _ := strings.Cut(path, "/providers/")
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	op := segs[0] // the namespace, Microsoft.Web
	for i := 1; i < len(segs); i += 2 {
		if method == http.MethodPost && i == len(segs)-1 {
			return op + "/" + segs[i] + "/action"
		}
		op += "/" + segs[i]
	}
	switch method {
	case http.MethodGet:
		return op + "/read"
	case http.MethodDelete:
		return op + "/delete"
	}
	return op + "/write"
}

// TestEveryCallIsInTheGuardRole makes every call a guarded app gets, on
// production and on a slot (switch, read back, list, detect, run), and
// checks each is an operation the guard role grants, and that it grants
// nothing more.
func TestEveryCallIsInTheGuardRole(t *testing.T) {
	host := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer host.Close()
	hostName := strings.TrimPrefix(host.URL, "https://")
	s := newSite(map[string]string{"A": "1"})
	srv := s.server(t)
	srv.Get = func(context.Context, string, string, *armappservice.WebAppsClientGetOptions) (azfake.Responder[armappservice.WebAppsClientGetResponse], azfake.ErrorResponder) {
		var r azfake.Responder[armappservice.WebAppsClientGetResponse]
		r.SetResponse(http.StatusOK, armappservice.WebAppsClientGetResponse{Site: armappservice.Site{Kind: to.Ptr("functionapp"), Properties: &armappservice.SiteProperties{DefaultHostName: to.Ptr(hostName)}}}, nil)
		return r, azfake.ErrorResponder{}
	}
	srv.GetSlot = func(context.Context, string, string, string, *armappservice.WebAppsClientGetSlotOptions) (azfake.Responder[armappservice.WebAppsClientGetSlotResponse], azfake.ErrorResponder) {
		var r azfake.Responder[armappservice.WebAppsClientGetSlotResponse]
		r.SetResponse(http.StatusOK, armappservice.WebAppsClientGetSlotResponse{Site: armappservice.Site{Properties: &armappservice.SiteProperties{DefaultHostName: to.Ptr(hostName)}}}, nil)
		return r, azfake.ErrorResponder{}
	}
	srv.ListHostKeys = func(context.Context, string, string, *armappservice.WebAppsClientListHostKeysOptions) (azfake.Responder[armappservice.WebAppsClientListHostKeysResponse], azfake.ErrorResponder) {
		var r azfake.Responder[armappservice.WebAppsClientListHostKeysResponse]
		r.SetResponse(http.StatusOK, armappservice.WebAppsClientListHostKeysResponse{HostKeys: armappservice.HostKeys{MasterKey: to.Ptr("k")}}, nil)
		return r, azfake.ErrorResponder{}
	}
	srv.ListHostKeysSlot = func(context.Context, string, string, string, *armappservice.WebAppsClientListHostKeysSlotOptions) (azfake.Responder[armappservice.WebAppsClientListHostKeysSlotResponse], azfake.ErrorResponder) {
		var r azfake.Responder[armappservice.WebAppsClientListHostKeysSlotResponse]
		r.SetResponse(http.StatusOK, armappservice.WebAppsClientListHostKeysSlotResponse{HostKeys: armappservice.HostKeys{MasterKey: to.Ptr("k")}}, nil)
		return r, azfake.ErrorResponder{}
	}
	srv.GetInstanceFunctionSlot = func(_ context.Context, _, name, fn, _ string, _ *armappservice.WebAppsClientGetInstanceFunctionSlotOptions) (azfake.Responder[armappservice.WebAppsClientGetInstanceFunctionSlotResponse], azfake.ErrorResponder) {
		var r azfake.Responder[armappservice.WebAppsClientGetInstanceFunctionSlotResponse]
		r.SetResponse(http.StatusOK, armappservice.WebAppsClientGetInstanceFunctionSlotResponse{FunctionEnvelope: armappservice.FunctionEnvelope{Name: to.Ptr(name + "/" + fn)}}, nil)
		return r, azfake.ErrorResponder{}
	}
	rec := &actions{next: fake.NewWebAppsServerTransport(srv), seen: map[string]bool{}}
	settings := appservice.Settings{Policy: armwrite.Policy{RetryDelay: time.Millisecond}, Transport: rec, HTTPClient: host.Client()}
	sw := appservice.New(&azfake.TokenCredential{}, settings)
	d := appservice.NewDiscoverer(&azfake.TokenCredential{}, settings, 0)
	for _, a := range []struct {
		name string
		slot string
	}{{"production", ""}, {"a slot", "staging"}} {
		target := app
		target.Slot = a.slot
		steps := []func() error{
			func() error { return sw.Apply(t.Context(), target, map[string]bool{"ProcessOrders": true}) },
			func() error { _, err := sw.Disabled(t.Context(), target); return err },
			func() error { _, err := sw.Functions(t.Context(), target); return err },
			func() error { _, err := sw.Effective(t.Context(), target, []string{"ProcessOrders"}); return err },
			func() error { return sw.Run(t.Context(), target, "ProcessOrders") },
			func() error { _, err := d.Functions(t.Context(), target); return err },
		}
		if a.slot == "" {
			steps = append(steps, func() error { _, err := sw.Detect(t.Context(), target); return err })
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("%s, step %d: %v", a.name, i, err)
			}
		}
	}
	var outside []string
	for op := range rec.seen {
		if !slices.Contains(appservice.RoleActions, op) {
			outside = append(outside, op)
		}
	}
	if len(outside) > 0 {
		t.Errorf("calls the guard role does not grant: %v (add them to appservice.RoleActions and guard.bicep, or stop making them)", outside)
	}
	for _, op := range appservice.RoleActions {
		if !rec.seen[op] {
			t.Errorf("the guard role grants %s, which nothing called: grant no more than is used", op)
		}
	}
}
