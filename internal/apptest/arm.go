package apptest

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"sync"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"
)

// GuardableARM is subscription sub with one function app: an Event Hubs
// function, a queue function, a timer, an HTTP function and one of a
// trigger Fusebox has no defaults for; identity-based host storage and
// Event Hubs settings, a time zone, and a secret no page may show. The
// second result reads the app's settings as the fake holds them.
func GuardableARM(sub string) (*armfake.WebAppsServer, *ARMSettings) {
	siteID := "/subscriptions/" + sub + "/resourceGroups/rg-orders/providers/Microsoft.Web/sites/func-orders"
	arm := &armfake.WebAppsServer{NewListPager: func(*armappservice.WebAppsClientListOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListResponse]) {
		resp.AddPage(http.StatusOK, armappservice.WebAppsClientListResponse{WebAppCollection: armappservice.WebAppCollection{Value: []*armappservice.Site{
			{ID: to.Ptr(siteID), Kind: to.Ptr("functionapp"), Location: to.Ptr("westeurope"), Properties: &armappservice.SiteProperties{}},
		}}}, nil)
		return
	}}
	arm.Get = func(context.Context, string, string, *armappservice.WebAppsClientGetOptions) (resp azfake.Responder[armappservice.WebAppsClientGetResponse], errResp azfake.ErrorResponder) {
		resp.SetResponse(http.StatusOK, armappservice.WebAppsClientGetResponse{Site: armappservice.Site{ID: to.Ptr(siteID), Kind: to.Ptr("functionapp"), Properties: &armappservice.SiteProperties{}}}, nil)
		return
	}
	arm.NewListFunctionsPager = func(rg, name string, _ *armappservice.WebAppsClientListFunctionsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse]) {
		fn := func(n string, binding map[string]any) *armappservice.FunctionEnvelope {
			return &armappservice.FunctionEnvelope{Name: to.Ptr(name + "/" + n), Properties: &armappservice.FunctionEnvelopeProperties{Config: map[string]any{"bindings": []any{binding}}}}
		}
		resp.AddPage(http.StatusOK, armappservice.WebAppsClientListFunctionsResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{Value: []*armappservice.FunctionEnvelope{
			fn("ProcessOrders", map[string]any{"type": "eventHubTrigger", "eventHubName": "%OrdersHub%", "consumerGroup": "fusebox", "connection": "EventHub"}),
			fn("TakeOrders", map[string]any{"type": "queueTrigger", "queueName": "orders", "connection": "AzureWebJobsStorage"}),
			fn("Nightly", map[string]any{"type": "timerTrigger", "schedule": "0 0 2 * * *"}),
			fn("Api", map[string]any{"type": "httpTrigger", "route": "orders"}),
			fn("Mirror", map[string]any{"type": "sqlTrigger", "tableName": "dbo.Orders"}),
		}}}, nil)
		return
	}
	held := &ARMSettings{changed: make(chan struct{})}
	mu := &held.mu
	settings := map[string]*string{
		"AzureWebJobsStorage__accountName":  to.Ptr("ordersstore"),
		"WEBSITE_TIME_ZONE":                 to.Ptr("W. Europe Standard Time"),
		"OrdersHub":                         to.Ptr("orders"),
		"EventHub__fullyQualifiedNamespace": to.Ptr("orders-ns.servicebus.windows.net"),
		"PAYMENT_API_KEY":                   to.Ptr("sk_live_do-not-show-me"),
		// The queue extension's batch, as host.json would set it.
		"AzureFunctionsJobHost__extensions__queues__batchSize": to.Ptr("8"),
	}
	arm.ListApplicationSettings = func(context.Context, string, string, *armappservice.WebAppsClientListApplicationSettingsOptions) (resp azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], errResp azfake.ErrorResponder) {
		mu.Lock()
		defer mu.Unlock()
		resp.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsResponse{StringDictionary: armappservice.StringDictionary{Properties: maps.Clone(settings)}}, nil)
		return
	}
	arm.UpdateApplicationSettings = func(_ context.Context, _, _ string, d armappservice.StringDictionary, _ *armappservice.WebAppsClientUpdateApplicationSettingsOptions) (resp azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse], errResp azfake.ErrorResponder) {
		mu.Lock()
		defer mu.Unlock()
		settings = maps.Clone(d.Properties)
		held.settings = settings
		close(held.changed)
		held.changed = make(chan struct{})
		resp.SetResponse(http.StatusOK, armappservice.WebAppsClientUpdateApplicationSettingsResponse{StringDictionary: d}, nil)
		return
	}
	// The host reads its Disabled settings, as Functions does.
	arm.GetFunction = func(_ context.Context, _, name, fn string, _ *armappservice.WebAppsClientGetFunctionOptions) (resp azfake.Responder[armappservice.WebAppsClientGetFunctionResponse], errResp azfake.ErrorResponder) {
		mu.Lock()
		v := settings["AzureWebJobs."+fn+".Disabled"]
		mu.Unlock()
		disabled := v != nil && strings.EqualFold(*v, "true")
		resp.SetResponse(http.StatusOK, armappservice.WebAppsClientGetFunctionResponse{FunctionEnvelope: armappservice.FunctionEnvelope{
			Name: to.Ptr(name + "/" + fn), Properties: &armappservice.FunctionEnvelopeProperties{IsDisabled: to.Ptr(disabled)}}}, nil)
		return
	}
	held.settings = settings
	return arm, held
}

// ARMSettings are a fake site's app settings as ARM holds them.
type ARMSettings struct {
	mu       sync.Mutex
	settings map[string]*string
	changed  chan struct{} // closed, and replaced, when the settings are written
}

// Get is the settings now.
func (a *ARMSettings) Get() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.settings))
	for k, v := range a.settings {
		out[k] = *v
	}
	return out
}

// Changed is closed at the next write of the settings.
func (a *ARMSettings) Changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

// Set sets one app setting as if someone had set it in Azure.
func (a *ARMSettings) Set(name, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settings[name] = &value
}
