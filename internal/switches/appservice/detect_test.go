package appservice_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/switches/appservice"
)

// rolling adds what this SDK version does not model to the site's answer:
// a Flex app's siteUpdateStrategy.
type rolling struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (r rolling) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.next.Do(req)
	if err != nil || req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/sites/func-orders") {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	body = bytes.Replace(body, []byte(`"functionAppConfig":{}`), []byte(`"functionAppConfig":{"siteUpdateStrategy":{"type":"RollingUpdate"}}`), 1)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

func TestDetectTellsTheHostingKind(t *testing.T) {
	app := circuit.App{ID: "orders", SubscriptionID: "00000000-0000-0000-0000-000000000000", ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}
	for _, tc := range []struct {
		name    string
		site    armappservice.Site
		rolling bool
		want    circuit.Hosting
		wantErr bool
	}{
		{"premium on Windows", armappservice.Site{Kind: to.Ptr("functionapp"), Properties: &armappservice.SiteProperties{}},
			false, circuit.Hosting{Kind: "functionapp", Plan: circuit.PlanAppService}, false},
		{"consumption on Linux", armappservice.Site{Kind: to.Ptr("functionapp,linux"), Properties: &armappservice.SiteProperties{}},
			false, circuit.Hosting{Kind: "functionapp,linux", Plan: circuit.PlanAppService, Linux: true}, false},
		{"flex without rolling updates", armappservice.Site{Kind: to.Ptr("functionapp,linux"), Properties: &armappservice.SiteProperties{FunctionAppConfig: &armappservice.FunctionAppConfig{}}},
			false, circuit.Hosting{Kind: "functionapp,linux", Plan: circuit.PlanFlex, Linux: true}, false},
		{"flex with rolling updates", armappservice.Site{Kind: to.Ptr("functionapp,linux"), Properties: &armappservice.SiteProperties{FunctionAppConfig: &armappservice.FunctionAppConfig{}}},
			true, circuit.Hosting{Kind: "functionapp,linux", Plan: circuit.PlanFlex, Linux: true, RollingUpdates: true}, false},
		{"functions in a container apps environment", armappservice.Site{Kind: to.Ptr("functionapp,linux,container,azurecontainerapps"),
			Properties: &armappservice.SiteProperties{ManagedEnvironmentID: to.Ptr("/subscriptions/x/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/env")}},
			false, circuit.Hosting{Kind: "functionapp,linux,container,azurecontainerapps", Plan: circuit.PlanContainerApps, Linux: true,
				Environment: "/subscriptions/x/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/env"}, false}, // the environment, for teams' scopes
		{"a web app", armappservice.Site{Kind: to.Ptr("app,linux"), Properties: &armappservice.SiteProperties{}}, false, circuit.Hosting{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(map[string]string{})
			s.resource = tc.site
			var tr interface {
				Do(*http.Request) (*http.Response, error)
			} = fake.NewWebAppsServerTransport(s.server(t))
			if tc.rolling {
				tr = rolling{next: tr}
			}
			sw := appservice.New(&azfake.TokenCredential{}, appservice.Settings{Transport: tr})
			got, err := sw.Detect(t.Context(), app)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("Detect = %+v, want %+v", got, tc.want)
			}
		})
	}
}
