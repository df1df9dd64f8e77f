package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/manifest"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
)

const fleetSub = "00000000-0000-4000-8000-0000000000f1"

// fleetARM is the SDK's fake App Service of one subscription holding
// sites function apps (pages of 100, as ARM pages them), each with
// functions functions (Event Hubs, queue and timer triggers) and two
// slots.
func fleetARM(sites, functions int) *armfake.WebAppsServer {
	site := func(i int) *armappservice.Site {
		return &armappservice.Site{ID: to.Ptr(fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-%d/providers/Microsoft.Web/sites/func-%04d", fleetSub, i%20, i)),
			Kind: to.Ptr("functionapp"), Location: to.Ptr("westeurope"), Properties: &armappservice.SiteProperties{}}
	}
	return &armfake.WebAppsServer{
		NewListPager: func(*armappservice.WebAppsClientListOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListResponse]) {
			for start := 0; start < sites; start += 100 {
				var page []*armappservice.Site
				for i := start; i < min(start+100, sites); i++ {
					page = append(page, site(i))
				}
				resp.AddPage(http.StatusOK, armappservice.WebAppsClientListResponse{WebAppCollection: armappservice.WebAppCollection{Value: page}}, nil)
			}
			return
		},
		NewListSlotsPager: func(rg, name string, _ *armappservice.WebAppsClientListSlotsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListSlotsResponse]) {
			resp.AddPage(http.StatusOK, armappservice.WebAppsClientListSlotsResponse{WebAppCollection: armappservice.WebAppCollection{Value: []*armappservice.Site{
				{Name: to.Ptr(name + "/staging")}, {Name: to.Ptr(name + "/canary")}}}}, nil)
			return
		},
		NewListFunctionsPager: func(rg, name string, _ *armappservice.WebAppsClientListFunctionsOptions) (resp azfake.PagerResponder[armappservice.WebAppsClientListFunctionsResponse]) {
			var envs []*armappservice.FunctionEnvelope
			for f := range functions {
				binding := map[string]any{"type": "eventHubTrigger", "eventHubName": "%Hub%", "connection": "EventHub", "consumerGroup": "$Default"}
				switch f % 3 {
				case 1:
					binding = map[string]any{"type": "queueTrigger", "queueName": fmt.Sprintf("q-%d", f), "connection": "AzureWebJobsStorage"}
				case 2:
					binding = map[string]any{"type": "timerTrigger", "schedule": "0 */5 * * * *"}
				}
				envs = append(envs, &armappservice.FunctionEnvelope{Name: to.Ptr(fmt.Sprintf("%s/F%02d", name, f)),
					Properties: &armappservice.FunctionEnvelopeProperties{Config: map[string]any{"bindings": []any{binding}}}})
			}
			resp.AddPage(http.StatusOK, armappservice.WebAppsClientListFunctionsResponse{FunctionEnvelopeCollection: armappservice.FunctionEnvelopeCollection{Value: envs}}, nil)
			return
		},
		ListApplicationSettings: func(context.Context, string, string, *armappservice.WebAppsClientListApplicationSettingsOptions) (resp azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], errResp azfake.ErrorResponder) {
			resp.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsResponse{StringDictionary: armappservice.StringDictionary{
				Properties: map[string]*string{"Hub": to.Ptr("orders"), "WEBSITE_TIME_ZONE": to.Ptr("W. Europe Standard Time")}}}, nil)
			return
		},
	}
}

// counting counts the requests that pass through it.
type counting struct {
	next  policy.Transporter
	calls atomic.Int64
}

func (c *counting) Do(req *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.next.Do(req)
}

// BenchmarkDiscovery is #35's discovery of 1,000 function apps with 20
// functions each through the SDK's fake server: one survey of the
// subscription (sites and slots), then every app's functions with their
// triggers and settings, eight apps at once, as Guard… and the drift
// watch read them. It reports the time and ARM calls of each.
func BenchmarkDiscovery(b *testing.B) {
	const sites, functions = 1000, 20
	for b.Loop() {
		arm := &counting{next: armfake.NewWebAppsServerTransport(fleetARM(sites, functions))}
		d := appservice.NewDiscoverer(&azfake.TokenCredential{}, appservice.Settings{Transport: arm, Policy: armwrite.Policy{RetryDelay: time.Millisecond}}, time.Minute)
		t0 := time.Now()
		s := d.Survey(context.Background(), []string{fleetSub})
		surveyed, surveyCalls := time.Since(t0), arm.calls.Load()
		if len(s.Sites) != sites || len(s.Refused) > 0 {
			b.Fatalf("the survey found %d sites, refused %v", len(s.Sites), s.Refused)
		}
		arm.calls.Store(0)
		t0 = time.Now()
		var wg sync.WaitGroup
		sema := make(chan struct{}, 8)
		var listed atomic.Int64
		for _, site := range s.Sites {
			wg.Go(func() {
				sema <- struct{}{}
				defer func() { <-sema }()
				fns, err := d.Functions(context.Background(), circuit.App{SubscriptionID: site.Subscription, ResourceGroup: site.ResourceGroup, Site: site.Name})
				if err != nil {
					b.Error(err)
				}
				listed.Add(int64(len(fns)))
			})
		}
		wg.Wait()
		if listed.Load() != sites*functions {
			b.Fatalf("listed %d functions, want %d", listed.Load(), sites*functions)
		}
		b.ReportMetric(surveyed.Seconds(), "survey-s")
		b.ReportMetric(float64(surveyCalls), "survey-arm-calls")
		b.ReportMetric(time.Since(t0).Seconds(), "functions-s")
		b.ReportMetric(float64(arm.calls.Load()), "functions-arm-calls")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDiscoverPage is P4 for Apps → Discover at 1,000 function apps
// (two slots each): the page a signed-in operator gets, the survey kept.
func BenchmarkDiscoverPage(b *testing.B) {
	srv := apptest.StartWith(b, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": fleetSub},
		apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(fleetARM(1000, 20))})
	c := signIn(b, srv)
	get := func() error {
		resp, err := c.Get(srv.URL + "/apps/discover")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Count(string(body), `data-testid="discovered-row"`) != 1000 {
			return fmt.Errorf("discover answered %d with %d rows", resp.StatusCode, strings.Count(string(body), `data-testid="discovered-row"`))
		}
		return nil
	}
	if err := get(); err != nil { // the first survey
		b.Fatal(err)
	}
	measure(b, get)
}

// BenchmarkApply is `fusebox apply` of a file of 1,000 circuits of one
// app against a Fusebox on Azurite: the time and API calls of the first
// apply, then of a second one of the same file, which must write nothing.
func BenchmarkApply(b *testing.B) {
	for b.Loop() {
		token, hash := auth.NewAPIToken()
		srv := apptest.Start(b, map[string]string{"FUSEBOX_API_TOKENS": "bench:operator:" + hash, "FUSEBOX_MAX_BODY_BYTES": "1048576"})
		settings := b.TempDir() + "/local.settings.json"
		if err := os.WriteFile(settings, []byte(`{"IsEncrypted": false, "Values": {}}`), 0o600); err != nil {
			b.Fatal(err)
		}
		var file bytes.Buffer
		fmt.Fprintf(&file, "version: 1\napps:\n  - id: bench\n    switch: local\n    local_settings: %s\ncircuits:\n", settings)
		for i := range 1000 {
			fmt.Fprintf(&file, "  - app: bench\n    function: F%04d\n    threshold: %d\n    window: 30s\n    recipients: [ops@example.com]\n", i, 10+i%90)
		}
		calls := map[string]int{}
		var mu sync.Mutex
		client := &manifest.Client{Base: srv.URL, Token: token, HTTP: &http.Client{Transport: roundTrip(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			calls[req.Method]++
			mu.Unlock()
			return http.DefaultTransport.RoundTrip(req)
		})}}
		apply := func() (time.Duration, error) {
			t0 := time.Now()
			doc, ps := manifest.Parse(file.Bytes())
			if len(ps) > 0 {
				return 0, ps
			}
			current, err := client.Current(context.Background())
			if err != nil {
				return 0, err
			}
			doc.Normalize()
			noEnv := func(string) (string, bool) { return "", false }
			if ps := manifest.Check(doc, current, false, noEnv); len(ps) > 0 {
				return 0, ps
			}
			plan := manifest.MakePlan(doc, current, false, noEnv)
			err = client.Apply(context.Background(), plan.Changes, noEnv, io.Discard)
			return time.Since(t0), err
		}
		took, err := apply()
		if err != nil {
			b.Fatal(err)
		}
		first := calls[http.MethodGet] + calls[http.MethodPost] + calls[http.MethodPut] + calls[http.MethodDelete]
		b.ReportMetric(took.Seconds(), "first-apply-s")
		b.ReportMetric(float64(first), "first-api-calls")
		calls = map[string]int{}
		took, err = apply()
		if err != nil {
			b.Fatal(err)
		}
		writes := calls[http.MethodPost] + calls[http.MethodPut] + calls[http.MethodDelete]
		if writes != 0 {
			b.Fatalf("the second apply wrote %d times", writes)
		}
		b.ReportMetric(took.Seconds(), "second-apply-s")
		b.ReportMetric(float64(calls[http.MethodGet]), "second-api-calls")
		b.ReportMetric(float64(writes), "second-writes")
	}
	b.ReportMetric(0, "ns/op")
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
