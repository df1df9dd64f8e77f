package appservice_test

import (
	"context"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/evaltest"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
)

// farm is several function apps behind the SDK's fake server; the sites in
// hang answer nothing for 60 s.
type farm struct {
	sites   map[string]*site
	hang    map[string]bool
	release chan struct{} // closed: hanging requests answer 404 at once
	written chan string   // the site of each settings write
}

func (f farm) server() *fake.WebAppsServer {
	return &fake.WebAppsServer{
		ListApplicationSettings: func(_ context.Context, _, name string, _ *armappservice.WebAppsClientListApplicationSettingsOptions) (azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], azfake.ErrorResponder) {
			var out azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsResponse{StringDictionary: dict(f.sites[name].list(""))}, nil)
			return out, azfake.ErrorResponder{}
		},
		UpdateApplicationSettings: func(_ context.Context, _, name string, d armappservice.StringDictionary, _ *armappservice.WebAppsClientUpdateApplicationSettingsOptions) (azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse], azfake.ErrorResponder) {
			f.sites[name].update("", d)
			f.written <- name
			var out azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientUpdateApplicationSettingsResponse{StringDictionary: d}, nil)
			return out, azfake.ErrorResponder{}
		},
	}
}

// hanging stands in front of the fake server and answers nothing for 60 s
// to requests for the sites in hang. (It is not done inside the fake's
// handler: the fake's dispatcher sends on a closed channel when a handler
// returns after the request's context ended, and panics.)
type hanging struct {
	farm farm
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (h hanging) Do(req *http.Request) (*http.Response, error) {
	for name := range h.farm.hang {
		if strings.Contains(req.URL.Path, "/sites/"+name+"/") {
			select {
			case <-req.Context().Done():
				return nil, req.Context().Err()
			case <-time.After(60 * time.Second):
			case <-h.farm.release:
				return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Header: http.Header{}, Request: req,
					Body: io.NopCloser(strings.NewReader(`{"error":{"code":"ResourceNotFound","message":"gone"}}`))}, nil
			}
		}
	}
	return h.next.Do(req)
}

// One app whose ARM endpoint hangs for 60 s does not hold up another app's
// trip: through the SDK's fake server, the other app's trigger is off
// within P1's target (1.5 s) of the tick that tripped it.
func TestAHangingAppDoesNotHoldUpAnothersTrip(t *testing.T) {
	st := evaltest.Store(t)
	f := farm{sites: map[string]*site{"func-slow": newSite(map[string]string{"A": "1"}), "func-fast": newSite(map[string]string{"B": "2"})},
		hang: map[string]bool{"func-slow": true}, release: make(chan struct{}), written: make(chan string, 10)}
	sw := appservice.New(&azfake.TokenCredential{}, appservice.Settings{Policy: armwrite.Policy{TryTimeout: 20 * time.Second}, Transport: hanging{farm: f, next: fake.NewWebAppsServerTransport(f.server())}})
	for _, a := range []string{"slow", "fast"} {
		app := circuit.App{ID: a, SubscriptionID: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg", Site: "func-" + a, Switch: circuit.SwitchARM}
		if err := st.Apps.Put(t.Context(), app); err != nil {
			t.Fatal(err)
		}
		if err := st.Circuits.Put(t.Context(), circuit.Circuit{AppID: a, Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}}); err != nil {
			t.Fatal(err)
		}
	}
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	claims, err := lease.NewClaims(st.Leases, "test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	eval := circuit.NewEvaluator(st.Breaker(), sw, circuit.EvaluatorSettings{Claims: claims, Clock: clk, ApplyTimeout: 90 * time.Second})
	// At the end the hanging endpoint answers, and the test waits for every
	// switch call to finish before it ends, rather than cancelling them: the
	// fake server is not safe against a request cancelled in flight.
	ctx := t.Context()
	defer func() { close(f.release); eval.Wait() }()
	fence := lease.Fence{Lease: "evaluator", Generation: 1}
	fail := func(app string) {
		if err := st.Failures.Record(t.Context(), "w", []storage.Report{{App: app, Function: "Process", Second: clk.Now(), Count: 101}}); err != nil {
			t.Fatal(err)
		}
	}
	fail("slow")
	if err := eval.Tick(ctx, fence); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	fail("fast")
	start := time.Now()
	if err := eval.Tick(ctx, fence); err != nil {
		t.Fatal(err)
	}
	// The hanging call would hold a tick that waited on it until the 90 s
	// apply timeout; 5 s leaves a loaded CI machine room for the reads.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the tick took %s while an app hangs", took)
	}
	select {
	case site := <-f.written:
		if site != "func-fast" {
			t.Fatalf("%s was written", site)
		}
	case <-time.After(1500 * time.Millisecond):
		t.Fatalf("fast's settings were not written 1.5 s after its tick, while slow hangs")
	}
	if f.sites["func-fast"].list("")["AzureWebJobs.Process.Disabled"] != "true" {
		t.Fatalf("fast's write did not switch its trigger off: %v", f.sites["func-fast"].list(""))
	}
	t.Logf("fast switched off %s after its tick", time.Since(start).Round(time.Millisecond))
	if f.sites["func-fast"].list("")["B"] != "2" {
		t.Error("fast's other settings changed")
	}
	if _, off := f.sites["func-slow"].list("")["AzureWebJobs.Process.Disabled"]; off {
		t.Error("slow was switched although its endpoint hangs")
	}
}

// A throttle of one function and a trip of another, decided in the same
// tick for one app, are one settings write (one restart), through the SDK's
// fake server; the ramp afterwards puts back exactly what was there.
func TestAThrottleAndATripOfOneAppAreOneWrite(t *testing.T) {
	st := evaltest.Store(t)
	f := farm{sites: map[string]*site{"func-orders": newSite(map[string]string{"FUNCTIONS_WORKER_RUNTIME": "node", "AzureFunctionsJobHost__extensions__queues__batchSize": "32"})},
		release: make(chan struct{}), written: make(chan string, 10)}
	sw := appservice.New(&azfake.TokenCredential{}, appservice.Settings{Policy: armwrite.Policy{TryTimeout: 20 * time.Second}, Transport: fake.NewWebAppsServerTransport(f.server())})
	app := circuit.App{ID: "orders", SubscriptionID: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg", Site: "func-orders", Switch: circuit.SwitchARM}
	if err := st.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	for _, c := range []circuit.Circuit{
		{AppID: "orders", Function: "Fulfil", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Queue: "orders", Throttle: circuit.Throttle{Threshold: 40, Quiet: time.Minute}}},
		{AppID: "orders", Function: "Import", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}},
	} {
		if err := st.Circuits.Put(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	clk := evaltest.Clock()
	eval := evaltest.Evaluator(t, st, sw, circuit.EvaluatorSettings{Clock: clk})
	tick := func() { t.Helper(); evaltest.Tick(t, eval) }
	if err := st.Failures.Record(t.Context(), "w", []storage.Report{
		{App: "orders", Function: "Fulfil", Second: clk.Now(), Count: 50},
		{App: "orders", Function: "Import", Second: clk.Now(), Count: 101},
	}); err != nil {
		t.Fatal(err)
	}
	tick()
	if n := len(f.written); n != 1 {
		t.Fatalf("%d settings writes for a throttle and a trip of one app in one tick; want 1", n)
	}
	<-f.written
	got := f.sites["func-orders"].list("")
	want := map[string]string{"FUNCTIONS_WORKER_RUNTIME": "node", "AzureWebJobs.Import.Disabled": "true",
		"AzureFunctionsJobHost__extensions__queues__batchSize": "8", "AzureFunctionsJobHost__extensions__queues__newBatchThreshold": "2"}
	if !equal(got, want) {
		t.Fatalf("after the tick: %v\nwant %v", got, want)
	}
	for _, fn := range []string{"Fulfil", "Import"} {
		if c, err := st.Circuits.Get(t.Context(), "orders", fn); err != nil || c.Pending() {
			t.Fatalf("%s: pending %v, %v", fn, c.Pending(), err)
		}
	}
	// Two quiet minutes: a half, then exactly what was there.
	for range 2 {
		clk.Advance(time.Minute)
		tick()
	}
	got = f.sites["func-orders"].list("")
	want = map[string]string{"FUNCTIONS_WORKER_RUNTIME": "node", "AzureWebJobs.Import.Disabled": "true", "AzureFunctionsJobHost__extensions__queues__batchSize": "32"}
	if !equal(got, want) {
		t.Errorf("after the ramp: %v\nwant %v (newBatchThreshold was absent: removed, not written with a default)", got, want)
	}
	if c, _ := st.Circuits.Get(t.Context(), "orders", "Fulfil"); c.State != circuit.Closed || c.Lowered != nil {
		t.Errorf("Fulfil after the ramp: %s, lowered %v", c.State, c.Lowered)
	}
}

// The throttle's plan for each trigger kind, on App Service and Flex
// Consumption alike (one switch: the app's settings through ARM), through
// the SDK's fake: what a throttle writes at a quarter and at half, and
// that the ramp's end leaves exactly what was there, settings that were
// absent removed. With dynamic concurrency on, the trigger's own options
// are ignored by the host, so the plan lowers its ceiling instead.
func TestThrottlePlansOfEachTriggerKindThroughARM(t *testing.T) {
	const (
		ehMax, ehMin, ehPrefetch = "AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize", "AzureFunctionsJobHost__extensions__eventHubs__minEventBatchSize", "AzureFunctionsJobHost__extensions__eventHubs__prefetchCount"
		sbCalls, sbSessions      = "AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls", "AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentSessions"
		qBatch, qThreshold       = "AzureFunctionsJobHost__extensions__queues__batchSize", "AzureFunctionsJobHost__extensions__queues__newBatchThreshold"
		dynamic, ceiling         = "AzureFunctionsJobHost__concurrency__dynamicConcurrencyEnabled", "AzureFunctionsJobHost__concurrency__maximumFunctionConcurrency"
	)
	for _, tc := range []struct {
		name          string
		hosting       circuit.Hosting
		kind          string
		before        map[string]string
		quarter, half map[string]string // the levers' values; "" absent
	}{
		{"Event Hubs on App Service, a batch set with a minimum above its quarter", circuit.Hosting{Plan: circuit.PlanAppService}, "eventHub",
			map[string]string{ehMax: "64", ehMin: "32"},
			map[string]string{ehMax: "16", ehMin: "16", ehPrefetch: "75"}, map[string]string{ehMax: "32", ehMin: "32", ehPrefetch: "150"}},
		{"Service Bus sessions on App Service, calls absent", circuit.Hosting{Plan: circuit.PlanAppService}, "serviceBus",
			map[string]string{sbSessions: "16"},
			map[string]string{sbCalls: "4", sbSessions: "4"}, map[string]string{sbCalls: "8", sbSessions: "8"}},
		{"Storage queues on Flex Consumption with rolling updates", circuit.Hosting{Plan: circuit.PlanFlex, RollingUpdates: true}, "queue",
			map[string]string{qBatch: "32"},
			map[string]string{qBatch: "8", qThreshold: "2"}, map[string]string{qBatch: "16", qThreshold: "4"}},
		{"Storage queues on Flex Consumption with dynamic concurrency on", circuit.Hosting{Plan: circuit.PlanFlex}, "queue",
			map[string]string{dynamic: "true", qBatch: "32"},
			map[string]string{ceiling: "125", qBatch: "32", qThreshold: ""}, map[string]string{ceiling: "250", qBatch: "32", qThreshold: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := evaltest.Store(t)
			before := map[string]string{"FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"}
			maps.Copy(before, tc.before)
			f := farm{sites: map[string]*site{"func-orders": newSite(maps.Clone(before))}, release: make(chan struct{}), written: make(chan string, 10)}
			sw := appservice.New(&azfake.TokenCredential{}, appservice.Settings{Policy: armwrite.Policy{TryTimeout: 20 * time.Second}, Transport: fake.NewWebAppsServerTransport(f.server())})
			app := circuit.App{ID: "orders", SubscriptionID: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg", Site: "func-orders", Switch: circuit.SwitchARM, Hosting: tc.hosting}
			if err := st.Apps.Put(t.Context(), app); err != nil {
				t.Fatal(err)
			}
			if err := st.Circuits.Put(t.Context(), circuit.Circuit{AppID: "orders", Function: "Work", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Throttle: circuit.Throttle{Threshold: 40, Quiet: time.Minute, Kind: tc.kind}}}); err != nil {
				t.Fatal(err)
			}
			clk := evaltest.Clock()
			eval := evaltest.Evaluator(t, st, sw, circuit.EvaluatorSettings{Clock: clk})
			levers := func(when string, want map[string]string) {
				t.Helper()
				got := f.sites["func-orders"].list("")
				for k, v := range want {
					if have, ok := got[k]; have != v || ok != (v != "") {
						t.Errorf("%s: %s = %q (set %v); want %q", when, k, have, ok, v)
					}
				}
			}
			if err := st.Failures.Record(t.Context(), "w", []storage.Report{{App: "orders", Function: "Work", Second: clk.Now(), Count: 50}}); err != nil {
				t.Fatal(err)
			}
			evaltest.Tick(t, eval)
			levers("at a quarter", tc.quarter)
			clk.Advance(time.Minute)
			evaltest.Tick(t, eval)
			levers("at half", tc.half)
			clk.Advance(time.Minute)
			evaltest.Tick(t, eval)
			if got := f.sites["func-orders"].list(""); !equal(got, before) {
				t.Errorf("after the ramp: %v\nwant exactly %v", got, before)
			}
			if n := len(f.written); n != 3 {
				t.Errorf("%d settings writes for a throttle and two steps; want 3, one each", n)
			}
		})
	}
}
