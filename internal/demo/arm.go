package demo

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"sync"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"
)

// Subscription is the demo's Azure subscription: what Apps → Discover
// surveys in `make run`, Azure Resource Manager being the SDK's fake
// server (ARM).
const Subscription = "7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b"

// The demo's function apps in Azure, not yet guarded: func-billing on an
// App Service plan (with a staging slot) and func-shipping on Flex
// Consumption. The orders app runs on this machine, switched through its
// local settings, and is not among them.
const (
	BillingSite  = "func-billing"
	ShippingSite = "func-shipping"
)

// ARM is the demo's stand-in for Azure Resource Manager: the App Service
// calls Fusebox makes (list sites, slots, functions and settings, read and
// write settings, read a function's state), answered by the SDK's own
// fake server from memory. func-billing's host storage is the demo's
// Azurite (hostStorage), so host insight reads it once it is guarded.
func ARM(hostStorage string) policy.Transporter {
	type site struct {
		rg, kind  string
		props     *armappservice.SiteProperties
		functions []*armappservice.FunctionEnvelope
		settings  map[string]*string
		slots     []string
	}
	fn := func(site, name string, binding map[string]any) *armappservice.FunctionEnvelope {
		return &armappservice.FunctionEnvelope{Name: to.Ptr(site + "/" + name), Properties: &armappservice.FunctionEnvelopeProperties{Config: map[string]any{"bindings": []any{binding}}}}
	}
	var mu sync.Mutex
	sites := map[string]*site{
		BillingSite: {rg: "rg-billing", kind: "functionapp,linux", props: &armappservice.SiteProperties{}, slots: []string{"staging"},
			functions: []*armappservice.FunctionEnvelope{
				fn(BillingSite, "ChargeCards", map[string]any{"type": "eventHubTrigger", "eventHubName": "%PaymentsHub%", "consumerGroup": "billing", "connection": "Payments"}),
				fn(BillingSite, "RetryRefunds", map[string]any{"type": "queueTrigger", "queueName": "refunds", "connection": "AzureWebJobsStorage"}),
				fn(BillingSite, "NightlyInvoices", map[string]any{"type": "timerTrigger", "schedule": "0 0 3 * * *"}),
				fn(BillingSite, "BillingApi", map[string]any{"type": "httpTrigger", "route": "invoices/{id}"}),
			},
			settings: map[string]*string{"AzureWebJobsStorage": to.Ptr(hostStorage), "PaymentsHub": to.Ptr("payments"),
				"Payments":          to.Ptr("Endpoint=sb://payments-demo.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=not-a-real-key"),
				"WEBSITE_TIME_ZONE": to.Ptr("W. Europe Standard Time")}},
		ShippingSite: {rg: "rg-shipping", kind: "functionapp,linux", props: &armappservice.SiteProperties{FunctionAppConfig: &armappservice.FunctionAppConfig{}},
			functions: []*armappservice.FunctionEnvelope{
				fn(ShippingSite, "BookCouriers", map[string]any{"type": "serviceBusTrigger", "queueName": "shipments", "connection": "ServiceBus"}),
				fn(ShippingSite, "TrackParcels", map[string]any{"type": "timerTrigger", "schedule": "0 */15 * * * *"}),
			},
			settings: map[string]*string{"ServiceBus__fullyQualifiedNamespace": to.Ptr("shipping-demo.servicebus.windows.net")}},
	}
	id := func(name string) string {
		return "/subscriptions/" + Subscription + "/resourceGroups/" + sites[name].rg + "/providers/Microsoft.Web/sites/" + name
	}
	listed := func(name string) *armappservice.Site {
		s := sites[name]
		return &armappservice.Site{ID: to.Ptr(id(name)), Name: to.Ptr(name), Kind: to.Ptr(s.kind), Location: to.Ptr("westeurope"), Properties: s.props}
	}
	of := func(name string) (*site, bool) {
		s, ok := sites[strings.ToLower(name)]
		return s, ok
	}
	srv := &armfake.WebAppsServer{
		NewListPager: func(*armappservice.WebAppsClientListOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListResponse]) {
			resp.AddPage(http.StatusOK, armappservice.WebAppsClientListResponse{WebAppCollection: armappservice.WebAppCollection{
				Value: []*armappservice.Site{listed(BillingSite), listed(ShippingSite)}}}, nil)
			return
		},
		Get: func(_ context.Context, _, name string, _ *armappservice.WebAppsClientGetOptions) (resp azfake.Responder[armappservice.WebAppsClientGetResponse], errResp azfake.ErrorResponder) {
			if _, ok := of(name); !ok {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			resp.SetResponse(http.StatusOK, armappservice.WebAppsClientGetResponse{Site: *listed(strings.ToLower(name))}, nil)
			return
		},
		NewListSlotsPager: func(_, name string, _ *armappservice.WebAppsClientListSlotsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListSlotsResponse]) {
			var slots []*armappservice.Site
			if s, ok := of(name); ok {
				for _, sl := range s.slots {
					slots = append(slots, &armappservice.Site{Name: to.Ptr(name + "/" + sl)})
				}
			}
			resp.AddPage(http.StatusOK, armappservice.WebAppsClientListSlotsResponse{WebAppCollection: armappservice.WebAppCollection{Value: slots}}, nil)
			return
		},
		NewListFunctionsPager: func(_, name string, _ *armappservice.WebAppsClientListFunctionsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse]) {
			s, ok := of(name)
			if !ok {
				resp.AddResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			resp.AddPage(http.StatusOK, armappservice.WebAppsClientListFunctionsResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{Value: s.functions}}, nil)
			return
		},
		ListApplicationSettings: func(_ context.Context, _, name string, _ *armappservice.WebAppsClientListApplicationSettingsOptions) (resp azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], errResp azfake.ErrorResponder) {
			s, ok := of(name)
			if !ok {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			mu.Lock()
			defer mu.Unlock()
			resp.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsResponse{StringDictionary: armappservice.StringDictionary{Properties: maps.Clone(s.settings)}}, nil)
			return
		},
		UpdateApplicationSettings: func(_ context.Context, _, name string, d armappservice.StringDictionary, _ *armappservice.WebAppsClientUpdateApplicationSettingsOptions) (resp azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse], errResp azfake.ErrorResponder) {
			s, ok := of(name)
			if !ok {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			mu.Lock()
			defer mu.Unlock()
			s.settings = maps.Clone(d.Properties)
			resp.SetResponse(http.StatusOK, armappservice.WebAppsClientUpdateApplicationSettingsResponse{StringDictionary: d}, nil)
			return
		},
		// A function is disabled by its AzureWebJobs.<name>.Disabled
		// setting, as the Functions host reads it.
		GetFunction: func(_ context.Context, _, name, function string, _ *armappservice.WebAppsClientGetFunctionOptions) (resp azfake.Responder[armappservice.WebAppsClientGetFunctionResponse], errResp azfake.ErrorResponder) {
			s, ok := of(name)
			if !ok {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			mu.Lock()
			v := s.settings["AzureWebJobs."+function+".Disabled"]
			mu.Unlock()
			disabled := v != nil && (strings.EqualFold(*v, "true") || *v == "1")
			resp.SetResponse(http.StatusOK, armappservice.WebAppsClientGetFunctionResponse{FunctionEnvelope: armappservice.FunctionEnvelope{
				Name: to.Ptr(name + "/" + function), Properties: &armappservice.FunctionEnvelopeProperties{IsDisabled: to.Ptr(disabled)}}}, nil)
			return
		},
	}
	return armfake.NewWebAppsServerTransport(srv)
}
