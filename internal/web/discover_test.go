package web_test

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
)

const (
	subOrders  = "00000000-0000-0000-0000-00000000000a"
	subRefused = "00000000-0000-0000-0000-00000000000b"
)

// refuses answers 403 for one subscription, as ARM does without Reader.
type refuses struct {
	sub  string
	next policy.Transporter
}

func (r refuses) Do(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.Path, "/subscriptions/"+r.sub+"/") {
		return &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{"Content-Type": {"application/json"}}, Request: req,
			Body: http.NoBody}, nil
	}
	return r.next.Do(req)
}

// An operator opens Discover: the function apps of the surveyed
// subscriptions are listed with their hosting, the registered one as
// guarded, the others with a Register link that fills the form with where
// the site is; the subscription that refused is named with what to grant.
// A viewer sees the same list and no link. Without subscriptions the page
// says what to set.
func TestDiscoverListsTheFleetAndWhatIsGuarded(t *testing.T) {
	t.Parallel()
	arm := &armfake.WebAppsServer{NewListPager: func(*armappservice.WebAppsClientListOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListResponse]) {
		site := func(rg, name, kind string, p *armappservice.SiteProperties) *armappservice.Site {
			return &armappservice.Site{ID: to.Ptr("/subscriptions/" + subOrders + "/resourceGroups/" + rg + "/providers/Microsoft.Web/sites/" + name),
				Kind: to.Ptr(kind), Location: to.Ptr("westeurope"), Properties: p}
		}
		resp.AddPage(http.StatusOK, armappservice.WebAppsClientListResponse{WebAppCollection: armappservice.WebAppCollection{Value: []*armappservice.Site{
			site("rg-orders", "func-orders", "functionapp", &armappservice.SiteProperties{}),
			site("rg-billing", "func-billing", "functionapp,linux", &armappservice.SiteProperties{FunctionAppConfig: &armappservice.FunctionAppConfig{}}),
			site("rg-web", "shop", "app", &armappservice.SiteProperties{}),
		}}}, nil)
		return
	}}
	arm.NewListFunctionsPager = func(rg, name string, _ *armappservice.WebAppsClientListFunctionsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse]) {
		fn := func(n string, binding map[string]any) *armappservice.FunctionEnvelope {
			return &armappservice.FunctionEnvelope{Name: to.Ptr(name + "/" + n), Properties: &armappservice.FunctionEnvelopeProperties{Config: map[string]any{"bindings": []any{binding}}}}
		}
		resp.AddPage(http.StatusOK, armappservice.WebAppsClientListFunctionsResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{Value: []*armappservice.FunctionEnvelope{
			fn("ProcessOrders", map[string]any{"type": "eventHubTrigger", "eventHubName": "%OrdersHub%", "connection": "EventHub"}),
			fn("TakeOrders", map[string]any{"type": "queueTrigger", "queueName": "orders", "connection": "AzureWebJobsStorage"}),
			fn("Nightly", map[string]any{"type": "timerTrigger", "schedule": "0 0 2 * * *"}),
		}}}, nil)
		return
	}
	arm.NewListSlotsPager = func(rg, name string, _ *armappservice.WebAppsClientListSlotsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListSlotsResponse]) {
		resp.AddPage(http.StatusOK, armappservice.WebAppsClientListSlotsResponse{WebAppCollection: armappservice.WebAppCollection{Value: []*armappservice.Site{{Name: to.Ptr(name + "/staging")}}}}, nil)
		return
	}
	arm.ListApplicationSettings = func(context.Context, string, string, *armappservice.WebAppsClientListApplicationSettingsOptions) (resp azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], errResp azfake.ErrorResponder) {
		errResp.SetResponseError(http.StatusForbidden, "AuthorizationFailed") // Reader cannot list settings
		return
	}
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": subOrders + "," + subRefused},
		apptest.Options{ARMTransport: refuses{sub: subRefused, next: armfake.NewWebAppsServerTransport(arm)}})
	if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: "orders", SubscriptionID: subOrders, ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}); err != nil {
		t.Fatal(err)
	}

	operator := newBrowser(t, srv.URL)
	operator.signIn("olivia")
	page := operator.get("/apps/discover")
	wantStatus(t, page, http.StatusOK)
	rows := testRows(page.body)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want the two function apps (not the web app):\n%s", len(rows), page.body)
	}
	if !strings.Contains(rows[0], "func-billing") || !strings.Contains(rows[0], "Flex Consumption, Linux") || !strings.Contains(rows[0], `data-testid="register"`) {
		t.Errorf("billing's row: %s", rows[0])
	}
	if !strings.Contains(rows[1], "func-orders") || !strings.Contains(rows[1], "App Service, Windows") || !strings.Contains(rows[1], "guarded") || strings.Contains(rows[1], "Register") {
		t.Errorf("orders' row: %s", rows[1])
	}
	if !strings.Contains(rows[1], "<code>staging</code>") || !strings.Contains(rows[0], "none") {
		t.Errorf("the slots are not shown: orders %s\nbilling (Flex: none) %s", rows[1], rows[0])
	}
	slotForm := operator.get(html.UnescapeString(hrefAfter(rows[1], "<code>staging</code>")))
	wantStatus(t, slotForm, http.StatusOK)
	if !strings.Contains(slotForm.body, `value="staging"`) || !strings.Contains(slotForm.body, `value="func-orders"`) {
		t.Errorf("the slot's register link does not fill the slot:\n%s", slotForm.body)
	}
	if !strings.Contains(page.body, "1 app is not guarded yet") {
		t.Errorf("the unguarded count is not said:\n%s", page.body)
	}
	if !strings.Contains(page.body, subRefused) || !strings.Contains(page.body, "grant its identity Reader") {
		t.Errorf("the refusing subscription is not named:\n%s", page.body)
	}

	href := html.UnescapeString(attr(rows[0], `data-testid="register"`, "href"))
	form := operator.get(href)
	wantStatus(t, form, http.StatusOK)
	for _, want := range []string{`value="` + subOrders + `"`, `value="rg-billing"`, `value="func-billing"`} {
		if !strings.Contains(form.body, want) {
			t.Errorf("the Register form lacks %s", want)
		}
	}

	// The guarded app's functions: each trigger with its bindings, the
	// guarded one linked, the unguarded event-driven one offered a circuit,
	// the timer left alone, and the circuit whose function is gone named.
	for _, fn := range []string{"ProcessOrders", "Retired"} {
		if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: fn, Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, State: circuit.Closed}); err != nil {
			t.Fatal(err)
		}
	}
	fpage := operator.get("/apps/orders/functions")
	wantStatus(t, fpage, http.StatusOK)
	frows := strings.Split(fpage.body, `data-testid="function-row"`)[1:]
	if len(frows) != 3 {
		t.Fatalf("%d function rows, want 3:\n%s", len(frows), fpage.body)
	}
	nightly, process, take := frows[0], frows[1], frows[2]
	if !strings.Contains(nightly, "timer") || !strings.Contains(nightly, "0 0 2 * * *") || strings.Contains(nightly, "create-circuit") {
		t.Errorf("Nightly: %s", nightly)
	}
	if !strings.Contains(process, "eventHub") || !strings.Contains(process, ">guarded<") || !strings.Contains(process, "config/list/action") {
		t.Errorf("ProcessOrders: %s", process)
	}
	if !strings.Contains(take, "queue") || !strings.Contains(take, "orders") || !strings.Contains(take, `data-testid="create-circuit"`) {
		t.Errorf("TakeOrders: %s", take)
	}
	if !strings.Contains(fpage.body, `data-testid="gone"`) || !strings.Contains(fpage.body, "Retired") {
		t.Errorf("the circuit of a function that is gone is not named")
	}

	// Discovery lists every site of the subscriptions, whoever's team owns
	// it: admins' alone.
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	wantStatus(t, viewer.get("/apps/discover"), http.StatusForbidden)

	off := apptest.Start(t, nil)
	b := newBrowser(t, off.URL)
	b.signIn("olivia")
	if r := b.get("/apps/discover"); !strings.Contains(r.body, "FUSEBOX_DISCOVER_SUBSCRIPTIONS") {
		t.Errorf("without subscriptions the page does not say what to set:\n%s", r.body)
	}
}

// testRows cuts a page into its discovered rows.
func testRows(body string) []string {
	parts := strings.Split(body, `data-testid="discovered-row"`)
	rows := parts[1:]
	for i, r := range rows {
		if j := strings.Index(r, "</tr>"); j >= 0 {
			rows[i] = r[:j]
		}
	}
	return rows
}

// attr reads the named attribute of the element marked by marker.
func attr(s, marker, name string) string {
	i := strings.Index(s, marker)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(s[:i], "<")
	end := strings.Index(s[i:], ">") + i
	tag := s[start:end]
	k := strings.Index(tag, name+`="`)
	if k < 0 {
		return ""
	}
	v := tag[k+len(name)+2:]
	return v[:strings.Index(v, `"`)]
}

// hrefAfter is the first href after marker in s.
func hrefAfter(s, marker string) string {
	_, rest, _ := strings.Cut(s, marker)
	_, rest, _ = strings.Cut(rest, `href="`)
	href, _, _ := strings.Cut(rest, `"`)
	return href
}
