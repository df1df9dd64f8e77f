package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/eventhub/armeventhub"
	ehfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/eventhub/armeventhub/fake"

	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// When the circuit sets no retention, the countdown takes the hub's from
// ARM (the SDK's fake Event Hubs resource provider): the namespace found
// by the name the checkpoints give it in the app's subscription, then its
// event hub's retention description; the page says where it came from.
func TestTheHubsRetentionIsReadFromAzure(t *testing.T) {
	t.Parallel()
	const sub = "00000000-0000-0000-0000-0000000000e1"
	ns := strings.ToLower(testenv.Prefix(t))
	var asked []string
	eh := ehfake.ServerFactory{
		NamespacesServer: ehfake.NamespacesServer{NewListPager: func(*armeventhub.NamespacesClientListOptions) (resp azfake.PagerResponder[armeventhub.NamespacesClientListResponse]) {
			asked = append(asked, "list namespaces")
			resp.AddPage(http.StatusOK, armeventhub.NamespacesClientListResponse{EHNamespaceListResult: armeventhub.EHNamespaceListResult{Value: []*armeventhub.EHNamespace{
				{Name: to.Ptr("other-ns"), ID: to.Ptr("/subscriptions/" + sub + "/resourceGroups/rg-other/providers/Microsoft.EventHub/namespaces/other-ns")},
				{Name: to.Ptr(ns), ID: to.Ptr("/subscriptions/" + sub + "/resourceGroups/rg-hubs/providers/Microsoft.EventHub/namespaces/" + ns)},
			}}}, nil)
			return
		}},
		EventHubsServer: ehfake.EventHubsServer{Get: func(_ context.Context, group, namespace, hub string, _ *armeventhub.EventHubsClientGetOptions) (resp azfake.Responder[armeventhub.EventHubsClientGetResponse], errResp azfake.ErrorResponder) {
			asked = append(asked, "get "+group+"/"+namespace+"/"+hub)
			resp.SetResponse(http.StatusOK, armeventhub.EventHubsClientGetResponse{Eventhub: armeventhub.Eventhub{Properties: &armeventhub.Properties{
				MessageRetentionInDays: to.Ptr[int64](7), // the older field: the description wins
				RetentionDescription:   &armeventhub.RetentionDescription{CleanupPolicy: to.Ptr(armeventhub.CleanupPolicyRetentionDescriptionDelete), RetentionTimeInHours: to.Ptr[int64](36)},
			}}}, nil)
			return
		}},
	}
	srv := apptest.StartWith(t, nil, apptest.Options{ARMTransport: ehfake.NewServerFactoryTransport(&eh)})
	ctx := t.Context()
	t0 := srv.Clock.Now()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", t0); err != nil {
		t.Fatal(err)
	}
	stream := demo.AgedStream(t0.Add(-time.Hour), 10, 36*time.Hour, srv.Clock.Now)
	if err := demo.SeedHostStorage(ctx, srv.App.Store, testenv.ConnectionString(t), t0, demo.HostSeed{HubAddr: amqphubtest.Serve(t, stream.Served()), Namespace: ns + ".servicebus.windows.net"}); err != nil {
		t.Fatal(err)
	}
	app, err := srv.App.Store.Apps.Get(ctx, demo.AppID)
	if err != nil {
		t.Fatal(err)
	}
	app.SubscriptionID = sub
	if err := srv.App.Store.Apps.Put(ctx, app); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.HubRetention = 0
	ci.State, ci.Episode, ci.AppliedEpisode, ci.ChangedAt, ci.AppliedAt = circuit.Open, ci.Episode+1, ci.Episode+1, t0, t0
	if err := srv.App.Store.Circuits.Put(ctx, ci); err != nil {
		t.Fatal(err)
	}

	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/circuits/" + demo.AppID + "/ProcessOrders").body
	if !strings.Contains(page, "The oldest waiting event arrived 1 h ago, on partition 1; the hub keeps events 36h (as Azure says), so they begin to expire in 35 h") {
		t.Errorf("the countdown does not take the hub's retention from Azure:\n%s", section(page, `data-testid="host-insight"`))
	}
	res := viewer.get("/api/v1/circuits/" + demo.AppID + "/ProcessOrders/host")
	wantStatus(t, res, http.StatusOK)
	var host struct {
		Hours     int       `json:"event_hub_retention_hours"`
		FromAzure bool      `json:"retention_from_azure"`
		Expires   time.Time `json:"expires"`
	}
	if err := json.Unmarshal([]byte(res.body), &host); err != nil || host.Hours != 36 || !host.FromAzure || !host.Expires.Equal(t0.Add(35*time.Hour)) {
		t.Errorf("the host API says %+v (%v); want 36 h from Azure, expiring at %s", host, err, t0.Add(35*time.Hour))
	}
	if strings.Join(asked, "; ") != "list namespaces; get rg-hubs/"+ns+"/orders" {
		t.Errorf("ARM was asked: %v; want one list and one read, the answer kept for the API's view", asked)
	}
}
