package containerapps_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appcontainers/armappcontainers/v3"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appcontainers/armappcontainers/v3/fake"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
	"github.com/fusebox/fusebox/internal/switches/containerapps"
)

// containerApp is a container app as the SDK's fake server keeps it: the
// template, its revisions, and a script of failures.
type containerApp struct {
	mu         sync.Mutex
	template   armappcontainers.Template
	revisions  map[string]armappcontainers.Template
	latest     string // latest revision; ready unless notReady
	ready      string // latest ready revision
	notReady   bool   // new revisions do not become ready (the app is restarting)
	patches    int
	failWrites []int
	hang       chan struct{}
	// pollsBeforeDone is how many "InProgress" polls a PATCH's operation answers.
	pollsBeforeDone int
	// beforeWrite runs as another writer changing the template would.
	beforeWrite func(n int)
}

func env(kv ...string) []*armappcontainers.EnvironmentVar {
	var out []*armappcontainers.EnvironmentVar
	for i := 0; i < len(kv); i += 2 {
		out = append(out, &armappcontainers.EnvironmentVar{Name: to.Ptr(kv[i]), Value: to.Ptr(kv[i+1])})
	}
	return out
}

func newApp() *containerApp {
	tpl := armappcontainers.Template{Containers: []*armappcontainers.Container{
		{Name: to.Ptr("functions"), Image: to.Ptr("myregistry.azurecr.io/orders:42"),
			Env: append(env("FUNCTIONS_WORKER_RUNTIME", "dotnet-isolated", "ORDERS_DB", "Server=db"),
				&armappcontainers.EnvironmentVar{Name: to.Ptr("AzureWebJobsStorage"), SecretRef: to.Ptr("storage-connection")})},
		{Name: to.Ptr("otel-sidecar"), Image: to.Ptr("otel/opentelemetry-collector:0.100.0"), Env: env("OTEL_MODE", "agent")},
	}}
	return &containerApp{template: tpl, revisions: map[string]armappcontainers.Template{"orders--1": clone(tpl)}, latest: "orders--1", ready: "orders--1"}
}

func clone(t armappcontainers.Template) armappcontainers.Template {
	out := armappcontainers.Template{}
	for _, c := range t.Containers {
		cc := *c
		cc.Env = nil
		for _, e := range c.Env {
			ee := *e
			cc.Env = append(cc.Env, &ee)
		}
		out.Containers = append(out.Containers, &cc)
	}
	return out
}

func (a *containerApp) resource() armappcontainers.ContainerApp {
	return armappcontainers.ContainerApp{Location: to.Ptr("westeurope"), Name: to.Ptr("orders"), Properties: &armappcontainers.ContainerAppProperties{
		Template: to.Ptr(clone(a.template)), LatestRevisionName: to.Ptr(a.latest), LatestReadyRevisionName: to.Ptr(a.ready),
		ProvisioningState: to.Ptr(armappcontainers.ContainerAppProvisioningStateSucceeded)}}
}

func (a *containerApp) envOf(container string) map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]string{}
	for _, c := range a.template.Containers {
		if *c.Name == container {
			for _, e := range c.Env {
				v := ""
				if e.Value != nil {
					v = *e.Value
				} else if e.SecretRef != nil {
					v = "secret:" + *e.SecretRef
				}
				out[*e.Name] = v
			}
		}
	}
	return out
}

func (a *containerApp) transport(t *testing.T) *flaky {
	srv := fake.ServerFactory{
		ContainerAppsServer: fake.ContainerAppsServer{
			Get: func(_ context.Context, rg, name string, _ *armappcontainers.ContainerAppsClientGetOptions) (azfake.Responder[armappcontainers.ContainerAppsClientGetResponse], azfake.ErrorResponder) {
				var resp azfake.Responder[armappcontainers.ContainerAppsClientGetResponse]
				var errResp azfake.ErrorResponder
				if rg != "rg-orders" || name != "orders" {
					errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
					return resp, errResp
				}
				a.mu.Lock()
				defer a.mu.Unlock()
				resp.SetResponse(http.StatusOK, armappcontainers.ContainerAppsClientGetResponse{ContainerApp: a.resource()}, nil)
				return resp, errResp
			},
			BeginUpdate: func(_ context.Context, rg, name string, patch armappcontainers.ContainerApp, _ *armappcontainers.ContainerAppsClientBeginUpdateOptions) (azfake.PollerResponder[armappcontainers.ContainerAppsClientUpdateResponse], azfake.ErrorResponder) {
				var resp azfake.PollerResponder[armappcontainers.ContainerAppsClientUpdateResponse]
				a.mu.Lock()
				defer a.mu.Unlock()
				if patch.Properties != nil && patch.Properties.Template != nil {
					a.template = clone(*patch.Properties.Template)
				}
				rev := fmt.Sprintf("orders--%d", len(a.revisions)+1)
				a.revisions[rev] = clone(a.template)
				a.latest = rev
				if !a.notReady {
					a.ready = rev
				}
				for range a.pollsBeforeDone {
					resp.AddNonTerminalResponse(http.StatusAccepted, nil)
				}
				resp.SetTerminalResponse(http.StatusOK, armappcontainers.ContainerAppsClientUpdateResponse{ContainerApp: a.resource()}, nil)
				return resp, azfake.ErrorResponder{}
			},
		},
		ContainerAppsRevisionsServer: fake.ContainerAppsRevisionsServer{
			GetRevision: func(_ context.Context, _, _, rev string, _ *armappcontainers.ContainerAppsRevisionsClientGetRevisionOptions) (azfake.Responder[armappcontainers.ContainerAppsRevisionsClientGetRevisionResponse], azfake.ErrorResponder) {
				var resp azfake.Responder[armappcontainers.ContainerAppsRevisionsClientGetRevisionResponse]
				a.mu.Lock()
				defer a.mu.Unlock()
				tpl := a.revisions[rev]
				resp.SetResponse(http.StatusOK, armappcontainers.ContainerAppsRevisionsClientGetRevisionResponse{
					Revision: armappcontainers.Revision{Name: to.Ptr(rev), Properties: &armappcontainers.RevisionProperties{Template: to.Ptr(clone(tpl))}}}, nil)
				return resp, azfake.ErrorResponder{}
			},
		},
	}
	return &flaky{app: a, next: fake.NewServerFactoryTransport(&srv)}
}

// flaky stands in front of the fake server as a busy ARM would: scripted
// PATCHes get an error status as a real response; hang holds requests.
type flaky struct {
	app  *containerApp
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (f *flaky) Do(req *http.Request) (*http.Response, error) {
	a := f.app
	a.mu.Lock()
	status := 0
	if req.Method == http.MethodPatch {
		a.patches++
		if len(a.failWrites) > 0 {
			status, a.failWrites = a.failWrites[0], a.failWrites[1:]
		}
		if hook := a.beforeWrite; hook != nil {
			n := a.patches
			a.mu.Unlock()
			hook(n)
			a.mu.Lock()
		}
	}
	hang := a.hang
	a.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	if status != 0 {
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Retry-After": {"0"}},
			Body: io.NopCloser(strings.NewReader(`{"error":{"code":"Busy","message":"try again"}}`)), Request: req}, nil
	}
	return f.next.Do(req)
}

var app = circuit.App{ID: "orders", SubscriptionID: "00000000-0000-0000-0000-000000000000", ResourceGroup: "rg-orders", Site: "orders", Switch: circuit.SwitchContainerApp}

func newSwitch(t *testing.T, a *containerApp) *containerapps.Switch {
	return containerapps.New(&azfake.TokenCredential{}, containerapps.Settings{Policy: armwrite.Policy{RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond, TryTimeout: 2 * time.Second}, Transport: a.transport(t), PollEvery: time.Millisecond})
}

func TestApplySetsTheHostContainersVariableAndKeepsTheRest(t *testing.T) {
	a := newApp()
	a.pollsBeforeDone = 2 // the new revision provisions for a while
	sw := newSwitch(t, a)
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatal(err)
	}
	host := a.envOf("functions")
	if host["AzureWebJobs_ProcessOrders_Disabled"] != "true" || host["ORDERS_DB"] != "Server=db" || host["AzureWebJobsStorage"] != "secret:storage-connection" || host["FUNCTIONS_WORKER_RUNTIME"] != "dotnet-isolated" {
		t.Errorf("host env after trip = %v", host)
	}
	if side := a.envOf("otel-sidecar"); len(side) != 1 || side["OTEL_MODE"] != "agent" {
		t.Errorf("the sidecar was changed: %v", side)
	}
	off, err := sw.Disabled(t.Context(), app)
	if err != nil || !off["ProcessOrders"] {
		t.Errorf("Disabled = %v, %v", off, err)
	}
	eff, err := sw.Effective(t.Context(), app, []string{"ProcessOrders"})
	if err != nil || !eff["ProcessOrders"] {
		t.Errorf("Effective = %v, %v: want the running revision to have it off", eff, err)
	}
	// The same again writes nothing: no new revision, no restart.
	before := a.patches
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil || a.patches != before {
		t.Errorf("a second identical Apply: err %v, %d new PATCHes", err, a.patches-before)
	}
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": false}); err != nil {
		t.Fatal(err)
	}
	if _, still := a.envOf("functions")["AzureWebJobs_ProcessOrders_Disabled"]; still {
		t.Error("resuming left the variable in place")
	}
}

// Busy answers are retried by reading and merging again, never by
// replaying the write: a change another writer made meanwhile survives.
func TestBusyAnswersAreRetriedWithAFreshRead(t *testing.T) {
	for _, status := range []int{http.StatusConflict, http.StatusTooManyRequests, http.StatusInternalServerError} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			a := newApp()
			a.failWrites = []int{status, status}
			a.beforeWrite = func(n int) {
				a.mu.Lock()
				defer a.mu.Unlock()
				if n == 1 { // a deploy lands while Fusebox's first write is refused
					a.template.Containers[0].Env = append(a.template.Containers[0].Env, env("DEPLOYED", "v43")...)
				}
			}
			sw := newSwitch(t, a)
			if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
				t.Fatal(err)
			}
			if a.patches < 3 {
				t.Errorf("%d PATCHes, want the two refused and one that went through", a.patches)
			}
			host := a.envOf("functions")
			if host["AzureWebJobs_ProcessOrders_Disabled"] != "true" {
				t.Error("the trigger is not off")
			}
			if host["DEPLOYED"] != "v43" {
				t.Error("the deploy's variable is gone: a write was replayed from a stale read")
			}
		})
	}
}

func TestAHangingARMCostsOnlyTheCallersDeadline(t *testing.T) {
	a := newApp()
	a.hang = make(chan struct{})
	defer close(a.hang)
	sw := newSwitch(t, a)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := sw.Apply(ctx, app, map[string]bool{"ProcessOrders": true})
	if err == nil {
		t.Fatal("no error from a hanging ARM")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Apply took %s with a 300 ms deadline", took)
	}
}

func TestNoHostContainerIsAClearPermanentError(t *testing.T) {
	a := newApp()
	a.template.Containers = a.template.Containers[1:] // the sidecar only
	err := newSwitch(t, a).Apply(t.Context(), app, map[string]bool{"ProcessOrders": true})
	if !errors.Is(err, containerapps.ErrNoHost) || !errors.Is(err, armwrite.ErrPermanent) || !strings.Contains(err.Error(), "otel-sidecar") {
		t.Errorf("err = %v, want ErrNoHost naming the containers, permanent", err)
	}
}

func TestADeletedAppIsPermanent(t *testing.T) {
	a := newApp()
	gone := app
	gone.Site = "gone"
	err := newSwitch(t, a).Apply(t.Context(), gone, map[string]bool{"ProcessOrders": true})
	if !errors.Is(err, armwrite.ErrPermanent) || !strings.Contains(err.Error(), "404") {
		t.Errorf("err = %v, want a permanent 404 message", err)
	}
}

// Until the new revision is ready, the running one still has the trigger
// on: Effective says so, which the circuit page shows as "written, not yet
// confirmed".
func TestEffectiveFollowsTheRunningRevision(t *testing.T) {
	a := newApp()
	a.notReady = true
	sw := newSwitch(t, a)
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatal(err)
	}
	eff, err := sw.Effective(t.Context(), app, []string{"ProcessOrders"})
	if err != nil || eff["ProcessOrders"] {
		t.Errorf("Effective = %v, %v; want still on while the new revision is not ready", eff, err)
	}
	a.mu.Lock()
	a.ready = a.latest
	a.mu.Unlock()
	if eff, err := sw.Effective(t.Context(), app, []string{"ProcessOrders"}); err != nil || !eff["ProcessOrders"] {
		t.Errorf("Effective = %v, %v; want off once the revision is ready", eff, err)
	}
}

func TestNamesWithDashesAreRefused(t *testing.T) {
	err := newSwitch(t, newApp()).Apply(t.Context(), app, map[string]bool{"process-orders": true})
	if err == nil || !strings.Contains(err.Error(), "'-'") {
		t.Errorf("err = %v, want a refusal of the dash", err)
	}
}
