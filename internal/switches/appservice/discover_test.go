package appservice_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
)

// bySubscription sends each request to the fake server of the
// subscription its path names; one that hangs answers only when the
// request's context ends.
type bySubscription map[string]policy.Transporter

func (b bySubscription) Do(req *http.Request) (*http.Response, error) {
	parts := strings.Split(req.URL.Path, "/")
	if len(parts) > 2 && parts[1] == "subscriptions" {
		if t, ok := b[parts[2]]; ok {
			return t.Do(req)
		}
	}
	return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

type hangs struct{}

func (hangs) Do(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

func listedSite(sub, rg, name, kind string, props *armappservice.SiteProperties) *armappservice.Site {
	return &armappservice.Site{ID: to.Ptr("/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Web/sites/" + name),
		Kind: to.Ptr(kind), Location: to.Ptr("westeurope"), Properties: props}
}

func listing(pages ...[]*armappservice.Site) *fake.WebAppsServer {
	return &fake.WebAppsServer{NewListPager: func(*armappservice.WebAppsClientListOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListResponse]) {
		for _, p := range pages {
			resp.AddPage(http.StatusOK, armappservice.WebAppsClientListResponse{WebAppCollection: armappservice.WebAppCollection{Value: p}}, nil)
		}
		return
	}}
}

// A survey lists every function app of the subscriptions it can read, over
// every page, with its hosting kind; web apps are left out; a subscription
// that refuses and one that never answers are each named with a reason in
// Fusebox's words, and hold up neither the other nor the result.
func TestSurveyListsFunctionAppsAndNamesWhatRefused(t *testing.T) {
	forbidden := &fake.WebAppsServer{NewListPager: func(*armappservice.WebAppsClientListOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListResponse]) {
		resp.AddResponseError(http.StatusForbidden, "AuthorizationFailed")
		return
	}}
	transport := bySubscription{
		"sub-a": fake.NewWebAppsServerTransport(listing(
			[]*armappservice.Site{
				listedSite("sub-a", "rg-orders", "func-orders", "functionapp,linux", &armappservice.SiteProperties{}),
				listedSite("sub-a", "rg-web", "shop", "app", &armappservice.SiteProperties{}),
				listedSite("sub-a", "rg-flex", "func-flex", "functionapp,linux", &armappservice.SiteProperties{FunctionAppConfig: &armappservice.FunctionAppConfig{}}),
			},
			[]*armappservice.Site{
				listedSite("sub-a", "rg-aca", "func-aca", "functionapp,linux,container,azurecontainerapps", &armappservice.SiteProperties{ManagedEnvironmentID: to.Ptr("/subscriptions/sub-a/resourceGroups/rg-aca/providers/Microsoft.App/managedEnvironments/env")}),
			})),
		"sub-b": fake.NewWebAppsServerTransport(forbidden),
		"sub-c": hangs{},
	}
	d := appservice.NewDiscoverer(&azfake.TokenCredential{}, appservice.Settings{Transport: transport, Policy: armwrite.Policy{RetryDelay: time.Millisecond}}, 300*time.Millisecond)
	start := time.Now()
	s := d.Survey(context.Background(), []string{"sub-a", "sub-b", "sub-c", "SUB-A"})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the survey took %s: the hanging subscription held it up", took)
	}
	var got []string
	for _, site := range s.Sites {
		got = append(got, site.Name+":"+site.Hosting.Plan+":"+site.Region)
	}
	want := "func-aca:containerapps:westeurope func-flex:flex:westeurope func-orders:appservice:westeurope"
	if strings.Join(got, " ") != want {
		t.Errorf("sites %v, want %s", got, want)
	}
	if len(s.Refused) != 2 || s.Refused[0].Subscription != "sub-b" || !strings.Contains(s.Refused[0].Reason, "grant its identity Reader") ||
		!strings.Contains(s.Refused[0].Reason, "deploy/azure/discovery.bicep") || s.Refused[1].Subscription != "sub-c" || !strings.Contains(s.Refused[1].Reason, "did not answer within 300ms") {
		t.Errorf("refused %+v", s.Refused)
	}
	for _, r := range s.Refused {
		if strings.Contains(r.Reason, "AuthorizationFailed") {
			t.Errorf("ARM's words reached the reason: %q", r.Reason)
		}
	}
	s.MarkGuarded([]circuit.App{{SubscriptionID: "sub-a", ResourceGroup: "rg-orders", Site: "func-orders"}})
	if s.Unguarded() != 2 {
		t.Errorf("unguarded %d, want 2", s.Unguarded())
	}
}

// An app's functions come with their triggers, %Setting% values resolved
// from its settings; without the right to list settings, each says so.
func TestFunctionsCarryTheirTriggers(t *testing.T) {
	config := map[string]any{"bindings": []any{map[string]any{"type": "eventHubTrigger", "eventHubName": "%Hub%", "consumerGroup": "fusebox", "connection": "EH"}}}
	timer := map[string]any{"bindings": []any{map[string]any{"type": "timerTrigger", "schedule": "0 */5 * * * *"}}}
	for _, mayList := range []bool{true, false} {
		srv := &fake.WebAppsServer{
			NewListFunctionsPager: func(rg, name string, _ *armappservice.WebAppsClientListFunctionsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse]) {
				resp.AddPage(http.StatusOK, armappservice.WebAppsClientListFunctionsResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{Value: []*armappservice.FunctionEnvelope{
					{Name: to.Ptr(name + "/Ingest"), Properties: &armappservice.FunctionEnvelopeProperties{Config: config}},
					{Name: to.Ptr(name + "/Nightly"), Properties: &armappservice.FunctionEnvelopeProperties{Config: timer}},
					{Name: to.Ptr(name + "/Broken"), Properties: &armappservice.FunctionEnvelopeProperties{}},
				}}}, nil)
				return
			},
			ListApplicationSettings: func(_ context.Context, rg, name string, _ *armappservice.WebAppsClientListApplicationSettingsOptions) (resp azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], errResp azfake.ErrorResponder) {
				if !mayList {
					errResp.SetResponseError(http.StatusForbidden, "AuthorizationFailed")
					return
				}
				resp.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsResponse{StringDictionary: armappservice.StringDictionary{Properties: map[string]*string{"Hub": to.Ptr("orders")}}}, nil)
				return
			},
		}
		d := appservice.NewDiscoverer(&azfake.TokenCredential{}, appservice.Settings{Transport: fake.NewWebAppsServerTransport(srv)}, 0)
		fns, err := d.Functions(context.Background(), circuit.App{SubscriptionID: "sub-a", ResourceGroup: "rg", Site: "func-orders"})
		if err != nil {
			t.Fatal(err)
		}
		if len(fns) != 3 || fns[0].Name != "Broken" || fns[0].Problem == "" || fns[1].Name != "Ingest" || fns[2].Trigger.Kind != fleet.Timer {
			t.Fatalf("functions %+v", fns)
		}
		hub, _ := fns[1].Trigger.Get("eventHubName")
		if mayList && hub.Value != "orders" {
			t.Errorf("hub %+v, want orders from the setting", hub)
		}
		if !mayList && (hub.Value != "" || !strings.Contains(hub.Unresolved, "config/list/action")) {
			t.Errorf("without the right: hub %+v", hub)
		}
		if s, _ := fns[2].Trigger.Get("schedule"); s.Value != "0 */5 * * * *" {
			t.Errorf("schedule %+v", s)
		}
	}
}

// A site that is gone, or an identity without Reader, is said in
// Fusebox's words with what to do, never ARM's.
func TestFunctionsSayWhyTheyWereNotListed(t *testing.T) {
	for status, want := range map[int]string{http.StatusNotFound: "was the app deleted or renamed", http.StatusForbidden: "grant Fusebox's identity Reader"} {
		srv := &fake.WebAppsServer{NewListFunctionsPager: func(string, string, *armappservice.WebAppsClientListFunctionsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse]) {
			resp.AddResponseError(status, "SecretCodeFromARM")
			return
		}}
		d := appservice.NewDiscoverer(&azfake.TokenCredential{}, appservice.Settings{Transport: fake.NewWebAppsServerTransport(srv)}, 0)
		_, err := d.Functions(context.Background(), circuit.App{SubscriptionID: "sub-a", ResourceGroup: "rg", Site: "func-gone"})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "func-gone") || strings.Contains(err.Error(), "SecretCodeFromARM") {
			t.Errorf("%d: %v, want it to say %q", status, err, want)
		}
		if gone := errors.Is(err, fleet.ErrGone); gone != (status == http.StatusNotFound) {
			t.Errorf("%d: errors.Is(err, fleet.ErrGone) = %v", status, gone)
		}
	}
}

// A survey lists the deployment slots of App Service sites (Flex
// Consumption and Container Apps have none, and are not asked), marks a
// slot guarded when an app names it, and says of a site whose slots ARM
// would not list that they were not read.
func TestSurveyListsSlots(t *testing.T) {
	srv := listing([]*armappservice.Site{
		listedSite("sub-a", "rg-orders", "func-orders", "functionapp", &armappservice.SiteProperties{}),
		listedSite("sub-a", "rg-orders", "func-locked", "functionapp", &armappservice.SiteProperties{}),
		listedSite("sub-a", "rg-flex", "func-flex", "functionapp,linux", &armappservice.SiteProperties{FunctionAppConfig: &armappservice.FunctionAppConfig{}}),
	})
	var mu sync.Mutex
	asked := map[string]bool{}
	srv.NewListSlotsPager = func(rg, name string, _ *armappservice.WebAppsClientListSlotsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListSlotsResponse]) {
		mu.Lock()
		asked[name] = true
		mu.Unlock()
		if name == "func-locked" {
			resp.AddResponseError(http.StatusForbidden, "AuthorizationFailed")
			return
		}
		resp.AddPage(http.StatusOK, armappservice.WebAppsClientListSlotsResponse{WebAppCollection: armappservice.WebAppCollection{Value: []*armappservice.Site{
			{Name: to.Ptr(name + "/staging")}, {Name: to.Ptr(name + "/canary")},
		}}}, nil)
		return
	}
	d := appservice.NewDiscoverer(&azfake.TokenCredential{}, appservice.Settings{Transport: fake.NewWebAppsServerTransport(srv), Policy: armwrite.Policy{RetryDelay: time.Millisecond}}, 5*time.Second)
	s := d.Survey(context.Background(), []string{"sub-a"})
	s.MarkGuarded([]circuit.App{{SubscriptionID: "sub-a", ResourceGroup: "rg-orders", Site: "func-orders", Slot: "Staging"}})
	got := map[string]fleet.Site{}
	for _, site := range s.Sites {
		got[site.Name] = site
	}
	orders := got["func-orders"]
	if len(orders.Slots) != 2 || orders.Slots[0] != (fleet.Slot{Name: "canary"}) || orders.Slots[1] != (fleet.Slot{Name: "staging", Guarded: true}) || orders.SlotsUnread {
		t.Errorf("func-orders' slots %+v (unread %v), want canary, and staging guarded", orders.Slots, orders.SlotsUnread)
	}
	if !got["func-locked"].SlotsUnread || len(got["func-locked"].Slots) != 0 {
		t.Errorf("func-locked: %+v, want its slots said unread", got["func-locked"])
	}
	if asked["func-flex"] || len(got["func-flex"].Slots) != 0 || got["func-flex"].SlotsUnread {
		t.Errorf("a Flex Consumption site's slots were asked for (%v) or said: %+v", asked["func-flex"], got["func-flex"])
	}
}

// A survey of a thousand function apps over ten pages lists each once,
// while a subscription ARM throttles (429 on every try) is named as such
// and holds up neither the list nor the result.
func TestSurveyOfAThousandAppsBesideAThrottledSubscription(t *testing.T) {
	var pages [][]*armappservice.Site
	for p := range 10 {
		var page []*armappservice.Site
		for i := range 100 {
			page = append(page, listedSite("sub-a", fmt.Sprintf("rg-%d", p), fmt.Sprintf("func-%04d", p*100+i), "functionapp,linux", &armappservice.SiteProperties{FunctionAppConfig: &armappservice.FunctionAppConfig{}}))
		}
		pages = append(pages, page)
	}
	throttled := &fake.WebAppsServer{NewListPager: func(*armappservice.WebAppsClientListOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListResponse]) {
		for range 10 {
			resp.AddResponseError(http.StatusTooManyRequests, "TooManyRequests")
		}
		return
	}}
	transport := bySubscription{"sub-a": fake.NewWebAppsServerTransport(listing(pages...)), "sub-t": fake.NewWebAppsServerTransport(throttled)}
	d := appservice.NewDiscoverer(&azfake.TokenCredential{}, appservice.Settings{Transport: transport, Policy: armwrite.Policy{RetryDelay: time.Millisecond}}, 5*time.Second)
	s := d.Survey(context.Background(), []string{"sub-a", "sub-t"})
	seen := map[string]bool{}
	for _, site := range s.Sites {
		seen[site.Name] = true
	}
	if len(s.Sites) != 1000 || len(seen) != 1000 {
		t.Errorf("listed %d sites (%d distinct), want 1,000 each once", len(s.Sites), len(seen))
	}
	if len(s.Refused) != 1 || s.Refused[0].Subscription != "sub-t" || !strings.Contains(s.Refused[0].Reason, "429") || strings.Contains(s.Refused[0].Reason, "TooManyRequests") {
		t.Errorf("refused %+v, want sub-t named with ARM's status in Fusebox's words", s.Refused)
	}
}
