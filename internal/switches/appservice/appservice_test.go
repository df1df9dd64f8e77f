package appservice_test

import (
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
	"github.com/fusebox/fusebox/internal/trigger"
)

// site is a function app as the SDK's fake server sees it: app settings
// for production and for each slot, and a script of failures to answer with.
type site struct {
	mu         sync.Mutex
	settings   map[string]map[string]string // slot ("" = production) -> settings
	reads      map[string]int
	writes     map[string]int
	failWrites []int // status codes to answer the next writes with
	failReads  []int
	// beforeWrite runs before each write is answered, as another writer
	// changing the settings at that moment would.
	beforeWrite func(attempt int)
	sticky      []string      // slot setting names
	hang        chan struct{} // when set, reads wait for it or their context
	// host is what the Functions host read at its last start: it follows
	// the settings only when restart is called, as a real app's does
	// once the restart a settings change causes is over.
	host map[string]string
	// attributeDisabled are functions a [Disable] attribute switches off.
	attributeDisabled map[string]bool
	// resource is what Get answers: kind and properties.
	resource armappservice.Site
}

// restart makes the host read the production settings again.
func (s *site) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.host = maps.Clone(s.settings[""])
}

func newSite(prod map[string]string) *site {
	return &site{settings: map[string]map[string]string{"": prod, "staging": {"STAGING_ONLY": "1"}},
		reads: map[string]int{}, writes: map[string]int{}}
}

func dict(m map[string]string) armappservice.StringDictionary {
	p := map[string]*string{}
	for k, v := range m {
		p[k] = to.Ptr(v)
	}
	return armappservice.StringDictionary{Properties: p}
}

func (s *site) list(slot string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings[slot]
}

func (s *site) update(slot string, d armappservice.StringDictionary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]string{}
	for k, v := range d.Properties {
		m[k] = *v
	}
	s.settings[slot] = m
}

// flaky stands in front of the SDK's fake server the way a busy ARM does:
// it counts every attempt and answers scripted ones with an error status,
// as a real HTTP response, so the SDK's retry policy sees what it would see
// from Azure. (The fake server's own error responders are non-retriable.)
type flaky struct {
	site *site
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (f *flaky) Do(req *http.Request) (*http.Response, error) {
	slot := ""
	if i := strings.Index(req.URL.Path, "/slots/"); i >= 0 {
		slot = strings.SplitN(req.URL.Path[i+len("/slots/"):], "/", 2)[0]
	}
	f.site.mu.Lock()
	var status int
	switch {
	case strings.HasSuffix(req.URL.Path, "/config/appsettings/list"):
		f.site.reads[slot]++
		if len(f.site.failReads) > 0 {
			status, f.site.failReads = f.site.failReads[0], f.site.failReads[1:]
		}
	case strings.HasSuffix(req.URL.Path, "/config/appsettings") && req.Method == http.MethodPut:
		f.site.writes[slot]++
		if len(f.site.failWrites) > 0 {
			status, f.site.failWrites = f.site.failWrites[0], f.site.failWrites[1:]
		}
		if hook := f.site.beforeWrite; hook != nil {
			n := f.site.writes[slot]
			f.site.mu.Unlock()
			hook(n)
			f.site.mu.Lock()
		}
	}
	hang := f.site.hang
	f.site.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	if status != 0 {
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(`{"error":{"code":"Busy","message":"try again"}}`)), Request: req}, nil
	}
	return f.next.Do(req)
}

func (s *site) server(t *testing.T) *fake.WebAppsServer {
	check := func(rg, name string) {
		if rg != "rg-orders" || name != "func-orders" {
			t.Errorf("called for %s/%s, want rg-orders/func-orders", rg, name)
		}
	}
	return &fake.WebAppsServer{
		ListApplicationSettings: func(_ context.Context, rg, name string, _ *armappservice.WebAppsClientListApplicationSettingsOptions) (azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], azfake.ErrorResponder) {
			check(rg, name)
			var out azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsResponse{StringDictionary: dict(s.list(""))}, nil)
			return out, azfake.ErrorResponder{}
		},
		ListApplicationSettingsSlot: func(_ context.Context, rg, name, slot string, _ *armappservice.WebAppsClientListApplicationSettingsSlotOptions) (azfake.Responder[armappservice.WebAppsClientListApplicationSettingsSlotResponse], azfake.ErrorResponder) {
			check(rg, name)
			var out azfake.Responder[armappservice.WebAppsClientListApplicationSettingsSlotResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsSlotResponse{StringDictionary: dict(s.list(slot))}, nil)
			return out, azfake.ErrorResponder{}
		},
		UpdateApplicationSettings: func(_ context.Context, rg, name string, d armappservice.StringDictionary, _ *armappservice.WebAppsClientUpdateApplicationSettingsOptions) (azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse], azfake.ErrorResponder) {
			check(rg, name)
			s.update("", d)
			var out azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientUpdateApplicationSettingsResponse{StringDictionary: d}, nil)
			return out, azfake.ErrorResponder{}
		},
		UpdateApplicationSettingsSlot: func(_ context.Context, rg, name, slot string, d armappservice.StringDictionary, _ *armappservice.WebAppsClientUpdateApplicationSettingsSlotOptions) (azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsSlotResponse], azfake.ErrorResponder) {
			check(rg, name)
			s.update(slot, d)
			var out azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsSlotResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientUpdateApplicationSettingsSlotResponse{StringDictionary: d}, nil)
			return out, azfake.ErrorResponder{}
		},
		ListSlotConfigurationNames: func(_ context.Context, rg, name string, _ *armappservice.WebAppsClientListSlotConfigurationNamesOptions) (azfake.Responder[armappservice.WebAppsClientListSlotConfigurationNamesResponse], azfake.ErrorResponder) {
			check(rg, name)
			s.mu.Lock()
			names := make([]*string, len(s.sticky))
			for i := range s.sticky {
				names[i] = to.Ptr(s.sticky[i])
			}
			s.mu.Unlock()
			var out azfake.Responder[armappservice.WebAppsClientListSlotConfigurationNamesResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientListSlotConfigurationNamesResponse{SlotConfigNamesResource: armappservice.SlotConfigNamesResource{
				Properties: &armappservice.SlotConfigNames{AppSettingNames: names}}}, nil)
			return out, azfake.ErrorResponder{}
		},
		UpdateSlotConfigurationNames: func(_ context.Context, rg, name string, r armappservice.SlotConfigNamesResource, _ *armappservice.WebAppsClientUpdateSlotConfigurationNamesOptions) (azfake.Responder[armappservice.WebAppsClientUpdateSlotConfigurationNamesResponse], azfake.ErrorResponder) {
			check(rg, name)
			s.mu.Lock()
			s.sticky = nil
			for _, n := range r.Properties.AppSettingNames {
				s.sticky = append(s.sticky, *n)
			}
			s.mu.Unlock()
			var out azfake.Responder[armappservice.WebAppsClientUpdateSlotConfigurationNamesResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientUpdateSlotConfigurationNamesResponse{SlotConfigNamesResource: r}, nil)
			return out, azfake.ErrorResponder{}
		},
		Get: func(_ context.Context, rg, name string, _ *armappservice.WebAppsClientGetOptions) (azfake.Responder[armappservice.WebAppsClientGetResponse], azfake.ErrorResponder) {
			check(rg, name)
			var out azfake.Responder[armappservice.WebAppsClientGetResponse]
			s.mu.Lock()
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientGetResponse{Site: s.resource}, nil)
			s.mu.Unlock()
			return out, azfake.ErrorResponder{}
		},
		GetFunction: func(_ context.Context, rg, name, fn string, _ *armappservice.WebAppsClientGetFunctionOptions) (azfake.Responder[armappservice.WebAppsClientGetFunctionResponse], azfake.ErrorResponder) {
			check(rg, name)
			var out azfake.Responder[armappservice.WebAppsClientGetFunctionResponse]
			var errOut azfake.ErrorResponder
			if fn == "Missing" {
				errOut.SetResponseError(http.StatusNotFound, "NotFound")
				return out, errOut
			}
			s.mu.Lock()
			disabled := s.attributeDisabled[fn] || trigger.Truthy(s.host["AzureWebJobs."+fn+".Disabled"])
			s.mu.Unlock()
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientGetFunctionResponse{FunctionEnvelope: armappservice.FunctionEnvelope{
				Name: to.Ptr(name + "/" + fn), Properties: &armappservice.FunctionEnvelopeProperties{IsDisabled: to.Ptr(disabled)}}}, nil)
			return out, errOut
		},
		NewListFunctionsPager: func(rg, name string, _ *armappservice.WebAppsClientListFunctionsOptions) azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse] {
			var p azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse]
			p.AddPage(http.StatusOK, armappservice.WebAppsClientListFunctionsResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{
				Value: []*armappservice.FunctionEnvelope{{Name: to.Ptr("func-orders/ProcessOrders")}, {Name: to.Ptr("func-orders/SyncInventory")}}}}, nil)
			p.AddPage(http.StatusOK, armappservice.WebAppsClientListFunctionsResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{
				Value: []*armappservice.FunctionEnvelope{{Name: to.Ptr("func-orders/ImportPrices")}}}}, nil)
			return p
		},
		NewListInstanceFunctionsSlotPager: func(rg, name, slot string, _ *armappservice.WebAppsClientListInstanceFunctionsSlotOptions) azfake.PagerResponder[armappservice.WebAppsClientListInstanceFunctionsSlotResponse] {
			var p azfake.PagerResponder[armappservice.WebAppsClientListInstanceFunctionsSlotResponse]
			p.AddPage(http.StatusOK, armappservice.WebAppsClientListInstanceFunctionsSlotResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{
				Value: []*armappservice.FunctionEnvelope{{Name: to.Ptr("func-orders/staging/ProcessOrders")}}}}, nil)
			return p
		},
	}
}

func newSwitch(t *testing.T, s *site) *appservice.Switch {
	return appservice.New(&azfake.TokenCredential{}, appservice.Settings{Policy: armwrite.Policy{RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond, TryTimeout: 2 * time.Second}, Transport: &flaky{site: s, next: fake.NewWebAppsServerTransport(s.server(t))}})
}

var app = circuit.App{ID: "orders", SubscriptionID: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}

func TestDisableKeepsEveryOtherSetting(t *testing.T) {
	s := newSite(map[string]string{"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;...", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated", "AzureWebJobs_ImportPrices_Disabled": "1"})
	sw := newSwitch(t, s)
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;...", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated",
		"AzureWebJobs_ImportPrices_Disabled": "1", "AzureWebJobs.ProcessOrders.Disabled": "true"}
	if !equal(s.settings[""], want) {
		t.Errorf("settings after disable = %v, want %v", s.settings[""], want)
	}
	if s.settings["staging"]["STAGING_ONLY"] != "1" || s.writes["staging"] != 0 {
		t.Error("the staging slot was touched")
	}
	off, err := sw.Disabled(t.Context(), app)
	if err != nil || !off["ProcessOrders"] || !off["ImportPrices"] || off["SyncInventory"] {
		t.Errorf("Disabled = %v (err %v), want ProcessOrders and ImportPrices", off, err)
	}

	// Already off: nothing is written, so the app is not restarted.
	writes := s.writes[""]
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatal(err)
	}
	if s.writes[""] != writes {
		t.Error("wrote settings that were already as wanted")
	}

	// Enabling removes both forms of the setting and keeps the rest.
	if err := sw.Apply(t.Context(), app, map[string]bool{"ImportPrices": false}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.settings[""]["AzureWebJobs_ImportPrices_Disabled"]; ok {
		t.Error("the underscore form survived enabling")
	}
	if s.settings[""]["AzureWebJobs.ProcessOrders.Disabled"] != "true" || s.settings[""]["FUNCTIONS_WORKER_RUNTIME"] != "dotnet-isolated" {
		t.Errorf("enabling one function changed others: %v", s.settings[""])
	}
}

func TestSlotsAreHonoured(t *testing.T) {
	s := newSite(map[string]string{"A": "1"})
	sw := newSwitch(t, s)
	staging := app
	staging.Slot = "staging"
	if err := sw.Apply(t.Context(), staging, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatal(err)
	}
	if s.settings["staging"]["AzureWebJobs.ProcessOrders.Disabled"] != "true" || s.settings["staging"]["STAGING_ONLY"] != "1" {
		t.Errorf("staging settings = %v", s.settings["staging"])
	}
	if s.reads[""]+s.writes[""] != 0 || s.settings[""]["A"] != "1" || len(s.settings[""]) != 1 {
		t.Error("production was read or written for a slot's change")
	}
	// A swap must not carry the switched-off trigger to production.
	if !slices.Equal(s.sticky, []string{"AzureWebJobs.ProcessOrders.Disabled"}) {
		t.Errorf("slot-sticky settings = %v, want the Disabled setting", s.sticky)
	}
	names, err := sw.Functions(t.Context(), staging)
	if err != nil || !slices.Equal(names, []string{"ProcessOrders"}) {
		t.Errorf("slot functions = %v (err %v)", names, err)
	}
}

// A throttle of a slot writes the slot's settings only, in one write with
// its triggers, and makes them slot-sticky: a swap must not carry lowered
// concurrency to production.
func TestASlotsThrottleStaysWithTheSlot(t *testing.T) {
	s := newSite(map[string]string{"A": "1"})
	sw := newSwitch(t, s)
	staging := app
	staging.Slot = "staging"
	batch := "2"
	if err := sw.Tune(t.Context(), staging, map[string]bool{"ProcessOrders": false}, map[string]*string{"AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize": &batch}); err != nil {
		t.Fatal(err)
	}
	if s.settings["staging"]["AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize"] != "2" || s.settings["staging"]["STAGING_ONLY"] != "1" || s.writes["staging"] != 1 {
		t.Errorf("staging settings = %v after %d writes", s.settings["staging"], s.writes["staging"])
	}
	if s.reads[""]+s.writes[""] != 0 {
		t.Error("production was read or written for a slot's throttle")
	}
	if !slices.Contains(s.sticky, "AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize") {
		t.Errorf("slot-sticky settings = %v, want the throttle's", s.sticky)
	}
}

func TestTransientErrorsAreRetried(t *testing.T) {
	s := newSite(map[string]string{"A": "1"})
	s.failReads = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}
	s.failWrites = []int{http.StatusConflict, http.StatusConflict, http.StatusInternalServerError}
	sw := newSwitch(t, s)
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatalf("after 429, 503, 409, 409 and 500: %v", err)
	}
	// The SDK retries the read (429, 503, ok); each failed write is followed
	// by a fresh read; the successful write by a read-back.
	if s.reads[""] != 7 || s.writes[""] != 4 {
		t.Errorf("reads %d, writes %d; want 7 and 4", s.reads[""], s.writes[""])
	}
	if s.settings[""]["AzureWebJobs.ProcessOrders.Disabled"] != "true" || s.settings[""]["A"] != "1" {
		t.Errorf("settings = %v", s.settings[""])
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	s := newSite(map[string]string{})
	s.failWrites = []int{http.StatusForbidden}
	sw := newSwitch(t, s)
	err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true})
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("got %v, want the 403", err)
	}
	if s.writes[""] != 1 {
		t.Errorf("a 403 was tried %d times", s.writes[""])
	}
}

// A deploy that changes the settings while Fusebox's write is refused with
// 409 keeps its change: the retry reads again instead of replaying.
func TestAConcurrentWritersChangeSurvivesA409(t *testing.T) {
	s := newSite(map[string]string{"A": "1", "DEPLOY_VERSION": "41"})
	s.failWrites = []int{http.StatusConflict}
	s.beforeWrite = func(n int) {
		if n == 1 {
			s.update("", dict(map[string]string{"A": "1", "DEPLOY_VERSION": "42", "NEW_KEY": "rotated"}))
		}
	}
	sw := newSwitch(t, s)
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "DEPLOY_VERSION": "42", "NEW_KEY": "rotated", "AzureWebJobs.ProcessOrders.Disabled": "true"}
	if !equal(s.list(""), want) {
		t.Errorf("settings = %v, want %v", s.list(""), want)
	}
}

// Three functions switched together are one write: one restart of the app.
func TestSeveralFunctionsAreOneWrite(t *testing.T) {
	s := newSite(map[string]string{"A": "1", "AzureWebJobs.SyncInventory.Disabled": "true"})
	sw := newSwitch(t, s)
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true, "ImportPrices": true, "SyncInventory": false}); err != nil {
		t.Fatal(err)
	}
	if s.writes[""] != 1 {
		t.Errorf("%d writes, want 1", s.writes[""])
	}
	want := map[string]string{"A": "1", "AzureWebJobs.ProcessOrders.Disabled": "true", "AzureWebJobs.ImportPrices.Disabled": "true"}
	if !equal(s.list(""), want) {
		t.Errorf("settings = %v, want %v", s.list(""), want)
	}
}

// A hanging ARM endpoint gives up when the caller's deadline ends, and says so.
func TestAHangingEndpointEndsAtTheDeadline(t *testing.T) {
	s := newSite(map[string]string{})
	s.hang = make(chan struct{})
	sw := newSwitch(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := sw.Apply(ctx, app, map[string]bool{"ProcessOrders": true})
	if err == nil {
		t.Fatal("a hanging endpoint reported success")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Apply took %s past a 300ms deadline", took)
	}
}

func TestNotFoundAndForbiddenSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusForbidden, "Fusebox trigger switch role (deploy/azure/guard.bicep) or Website Contributor on /subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-orders/providers/Microsoft.Web/sites/func-orders"},
		{http.StatusNotFound, "was the app deleted or renamed?"},
	} {
		s := newSite(map[string]string{})
		s.failReads = []int{tc.status}
		err := newSwitch(t, s).Apply(t.Context(), app, map[string]bool{"ProcessOrders": true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: got %v, want it to say %q", tc.status, err, tc.want)
		}
		if s.reads[""] != 1 {
			t.Errorf("%d was tried %d times", tc.status, s.reads[""])
		}
	}
}

func TestLinuxDashesAreRefusedClearly(t *testing.T) {
	s := newSite(map[string]string{})
	linux := app
	linux.Linux = true
	err := newSwitch(t, s).Apply(t.Context(), linux, map[string]bool{"process-orders": true})
	if err == nil || !strings.Contains(err.Error(), "Linux plans reject app setting names with '-'") {
		t.Errorf("got %v", err)
	}
	if s.reads[""]+s.writes[""] != 0 {
		t.Error("called ARM for a name it cannot set")
	}
}

func TestFunctionsAreListedAcrossPages(t *testing.T) {
	names, err := newSwitch(t, newSite(nil)).Functions(t.Context(), app)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ImportPrices", "ProcessOrders", "SyncInventory"}; !slices.Equal(names, want) {
		t.Errorf("functions = %v, want %v", names, want)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
