package funcapp_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appcontainers/armappcontainers/v3"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appcontainers/armappcontainers/v3/fake"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/switches/containerapps"
	"github.com/fusebox/fusebox/internal/teams"
)

// platform is a Container Apps environment that a platform team keeps in
// its own resource group, hosting other teams' container apps.
const platform = "/subscriptions/" + ordersSub + "/resourceGroups/rg-platform/providers/Microsoft.App/managedEnvironments/shared-env"

// containerAppsARM is the SDK's fake ARM with two container apps in
// rg-apps: ship-a in the platform's environment, ship-b in another.
func containerAppsARM(t *testing.T) *containerapps.Switch {
	envs := map[string]string{"ship-a": platform, "ship-b": "/subscriptions/" + ordersSub + "/resourceGroups/rg-other/providers/Microsoft.App/managedEnvironments/other-env"}
	srv := fake.ServerFactory{ContainerAppsServer: fake.ContainerAppsServer{
		Get: func(_ context.Context, rg, name string, _ *armappcontainers.ContainerAppsClientGetOptions) (azfake.Responder[armappcontainers.ContainerAppsClientGetResponse], azfake.ErrorResponder) {
			var resp azfake.Responder[armappcontainers.ContainerAppsClientGetResponse]
			var errResp azfake.ErrorResponder
			env, ok := envs[name]
			if rg != "rg-apps" || !ok {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return resp, errResp
			}
			resp.SetResponse(http.StatusOK, armappcontainers.ContainerAppsClientGetResponse{ContainerApp: armappcontainers.ContainerApp{
				Name: to.Ptr(name), Properties: &armappcontainers.ContainerAppProperties{ManagedEnvironmentID: to.Ptr(env)}}}, nil)
			return resp, errResp
		},
	}}
	return containerapps.New(&azfake.TokenCredential{}, containerapps.Settings{Transport: fake.NewServerFactoryTransport(&srv)})
}

// TestAnEnvironmentsScopeAdmitsItsContainerApps: a team whose scope is a
// Container Apps environment registers the container apps ARM says run
// in it, wherever their resource group; one in another environment, or
// one ARM does not know, is refused alike, saying no more than that.
func TestAnEnvironmentsScopeAdmitsItsContainerApps(t *testing.T) {
	r := scopedRegistry(t)
	env, err := teams.ParseScopes(strings.ToLower(platform))
	if err != nil {
		t.Fatal(err)
	}
	if got := teams.FormatScopes(env); got != platform+"\n" {
		t.Errorf("the environment's scope reads back as %q; want %q", got, platform)
	}
	ts := []teams.Team{{Name: "shipping", Scopes: env}}
	r.Teams = func(context.Context) ([]teams.Team, error) { return ts, nil }
	r.Hosting = switches.Router{ContainerApp: containerAppsARM(t)}
	shipping := as(t, "shipping")
	app := func(id string) circuit.App {
		return circuit.App{ID: id, Team: "shipping", Switch: circuit.SwitchContainerApp, SubscriptionID: ordersSub, ResourceGroup: "rg-apps", Site: id}
	}
	reg, err := r.Register(shipping, app("ship-a"), "sam")
	if err != nil {
		t.Fatalf("a container app in shipping's environment: %v", err)
	}
	if !strings.EqualFold(reg.App.Hosting.Environment, platform) || !ts[0].Reaches(reg.App, false) {
		t.Errorf("the registered app keeps environment %q; want %q, reached by shipping's scope", reg.App.Hosting.Environment, platform)
	}
	var refusals []string
	for _, id := range []string{"ship-b", "ship-unknown"} {
		_, err := r.Register(shipping, app(id), "sam")
		msg := problemOf(err, "site")
		if !strings.Contains(msg, "in no Container Apps environment of its scopes") {
			t.Errorf("%s: %v; want it refused as outside shipping's environments", id, err)
		}
		refusals = append(refusals, strings.ReplaceAll(msg, id, "X"))
	}
	if len(refusals) == 2 && refusals[0] != refusals[1] {
		t.Errorf("an app in another environment and one ARM does not know are told apart:\n%s\n%s", refusals[0], refusals[1])
	}

	// Each refusal cost Fusebox's identity an ARM read: one person gets a
	// few a minute, then is told to wait, and ARM is not asked.
	limited := false
	for i := range 20 {
		_, err := r.Register(shipping, app(fmt.Sprintf("probe-%d", i)), "sam")
		if strings.Contains(problemOf(err, "site"), "too many") {
			limited = i == 7 // three reads were spent above, of a burst of ten
			break
		}
	}
	if !limited {
		t.Error("twenty apps checked against environments in a row were never limited near the tenth")
	}
}
