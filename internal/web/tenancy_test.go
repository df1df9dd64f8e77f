package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/manifest"
)

// TestAnotherTeamsResourcesCannotBeNamed is billing's operator trying
// every way to name what orders was given: orders' local settings file
// (as given, and through a link), its site in its resource group, a site
// outside billing's scopes, and another storage account for billing's
// own app, through the API, the Register form and the host insight form.
// Each is refused, naming the missing scope or the taken target, and
// orders' settings file and ARM settings are unchanged after the sweep.
func TestAnotherTeamsResourcesCannotBeNamed(t *testing.T) {
	t.Parallel()
	const sub = "00000000-0000-4000-8000-0000000000f6"
	arm, armSettings := apptest.GuardableARM(sub)
	srv := apptest.StartWith(t, map[string]string{
		"FUSEBOX_LOCAL_USERS":            strings.Join([]string{apptest.User(t, "olivia", "admin"), apptest.User(t, "bianca", "operator@billing")}, ","),
		"FUSEBOX_TEAM_SCOPES":            "billing:/subscriptions/" + sub + "/resourceGroups/rg-billing,orders:/subscriptions/" + sub + "/resourceGroups/rg-orders",
		"FUSEBOX_DISCOVER_SUBSCRIPTIONS": sub,
	}, apptest.Options{ARMTransport: armfake.NewWebAppsServerTransport(arm)})
	ordersFile := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, ordersFile, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	// orders' site, registered before targets were claimed: found by
	// reading every app.
	if err := srv.App.Store.Apps.Create(t.Context(), circuit.App{ID: "orders-prod", Team: "orders", Switch: circuit.SwitchARM,
		SubscriptionID: sub, ResourceGroup: "rg-orders", Site: "func-orders"}); err != nil {
		t.Fatal(err)
	}
	fileBefore, err := os.ReadFile(ordersFile)
	if err != nil {
		t.Fatal(err)
	}
	armBefore := armSettings.Get()
	link := t.TempDir() + "/orders"
	if err := os.Symlink(strings.TrimSuffix(ordersFile, "/local.settings.json"), link); err != nil {
		t.Fatal(err)
	}
	_, token := issued(t, srv, "billing-ci", "billing", auth.RoleOperator)
	b := newBrowser(t, srv.URL)

	api := func(method, path string, body any) response {
		t.Helper()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(string(data)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		return b.do(req)
	}
	refused := func(what string, r response, field, says string) {
		t.Helper()
		var body struct {
			Fields map[string]string `json:"fields"`
		}
		_ = json.Unmarshal([]byte(r.body), &body)
		if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body.Fields[field], says) {
			t.Errorf("%s: %d %s; want 422 with %s saying %q", what, r.StatusCode, r.body, field, says)
		}
	}
	arm1 := func(id, rg, site string) map[string]any {
		return map[string]any{"id": id, "team": "billing", "switch": "arm", "subscription": sub, "resource_group": rg, "site": site}
	}

	refused("orders' settings file", api("POST", "/api/v1/apps", map[string]any{"id": "billing-alias", "team": "billing", "switch": "local", "local_settings": ordersFile}),
		"local_settings", "another app is registered for this local settings file")
	refused("orders' settings file through a link", api("POST", "/api/v1/apps", map[string]any{"id": "billing-alias", "team": "billing", "switch": "local", "local_settings": link + "/local.settings.json"}),
		"local_settings", "another app is registered for this local settings file")
	refused("orders' site", api("POST", "/api/v1/apps", arm1("billing-orders", "rg-orders", "func-orders")),
		"site", "/resourceGroups/rg-orders is not in team billing's scopes")
	refused("orders' site, spelled in capitals", api("POST", "/api/v1/apps", arm1("billing-orders", "RG-ORDERS", "FUNC-ORDERS")),
		"site", "is not in team billing's scopes")
	refused("a subscription billing was not given", api("POST", "/api/v1/apps", map[string]any{"id": "billing-else", "team": "billing", "switch": "arm",
		"subscription": "00000000-0000-4000-8000-0000000000aa", "resource_group": "rg-billing", "site": "func-billing"}),
		"site", "is not in team billing's scopes")
	withStorage := arm1("billing.prod", "rg-billing", "func-billing")
	withStorage["host_storage"] = "https://otherstore.blob.core.windows.net"
	refused("another storage account", api("POST", "/api/v1/apps", withStorage), "host_storage", "is not the storage account the app's own")

	// billing's own site registers; naming another account for it later
	// through the host insight form is refused too.
	if r := api("POST", "/api/v1/apps", arm1("billing.prod", "rg-billing", "func-billing")); r.StatusCode != http.StatusCreated {
		t.Fatalf("billing's own site: %d %s", r.StatusCode, r.body)
	}
	refused("another storage account on the API's update", api("PUT", "/api/v1/apps/billing.prod", map[string]any{"id": "billing.prod", "switch": "arm", "subscription": sub,
		"resource_group": "rg-billing", "site": "func-billing", "host_storage": "https://otherstore.blob.core.windows.net"}), "host_storage", "is not the storage account")
	refused("moving billing's app to orders", api("PUT", "/api/v1/apps/billing.prod", map[string]any{"id": "billing.prod", "team": "orders", "switch": "arm", "subscription": sub,
		"resource_group": "rg-billing", "site": "func-billing"}), "team", "is not a team you operate")

	wantStatus(t, b.signIn("bianca"), http.StatusSeeOther)
	r := b.post("/apps/new", url.Values{"_csrf": {b.csrf("/apps/new")}, "id": {"billing-form"}, "team": {"billing"}, "switch": {"local"}, "local_settings": {ordersFile}})
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, "another app is registered for this local settings file") {
		t.Errorf("the Register form naming orders' file: %d; want 422 saying it is taken", r.StatusCode)
	}
	r = b.post("/apps/new", url.Values{"_csrf": {b.csrf("/apps/new")}, "id": {"billing-form"}, "team": {"billing"}, "switch": {"arm"},
		"subscription": {sub}, "resource_group": {"rg-orders"}, "site": {"func-orders"}, "slot": {"staging"}})
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, "is not in team billing&#39;s scopes") {
		t.Errorf("the Register form naming orders' resource group: %d; want 422 naming the scope", r.StatusCode)
	}
	r = b.post("/apps/billing.prod/host/edit", url.Values{"_csrf": {b.csrf("/apps/billing.prod/host/edit")}, "host_storage": {"https://otherstore.blob.core.windows.net"}})
	if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, "is not the storage account the app") {
		t.Errorf("the host insight form naming another account: %d; want 422", r.StatusCode)
	}

	// Guarding is an admin's; even an admin guarding orders' site (into
	// billing) is told it is guarded already: the registry, the one door,
	// refuses an unregistered one outside billing's scopes as it refuses
	// every other (TestATeamReachesOnlyItsScopes).
	if r := b.post("/apps/discover/guard", url.Values{"_csrf": {b.csrf("/apps")}, "subscription": {sub}, "resource_group": {"rg-orders"}, "site": {"func-orders"}, "id": {"billing-guard"}, "team": {"billing"}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("billing's operator guarding orders' site: %d; want 403", r.StatusCode)
	}
	olivia := newBrowser(t, srv.URL)
	wantStatus(t, olivia.signIn("olivia"), http.StatusSeeOther)
	wantStatus(t, olivia.get("/apps/discover"), http.StatusOK)
	r = olivia.post("/apps/discover/guard", url.Values{"_csrf": {olivia.csrf("/apps")}, "subscription": {sub}, "resource_group": {"rg-orders"}, "site": {"func-orders"},
		"id": {"billing-guard"}, "name": {"Borrowed"}, "team": {"billing"}, "recipients": {"oncall@example.com"}})
	if !strings.Contains(r.body, "This site is guarded already") {
		t.Errorf("an admin guarding orders' site into billing: %d; want it told the site is guarded already", r.StatusCode)
	}

	// fusebox apply goes through the API, and is refused there the same.
	apply := &manifest.Client{Base: srv.URL, Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
	noEnv := func(string) (string, bool) { return "", false }
	for what, entry := range map[string][2]string{
		"orders' site":          {"switch: arm\n    subscription: " + sub + "\n    resource_group: rg-orders\n    site: func-orders", "is not in team billing's scopes"},
		"orders' settings file": {"switch: local\n    local_settings: " + ordersFile, "another app is registered for this local settings file"},
	} {
		doc, ps := manifest.Parse([]byte("version: 1\napps:\n  - id: billing.applied\n    team: billing\n    " + entry[0] + "\n"))
		current, err := apply.Current(t.Context())
		if len(ps) > 0 || err != nil {
			t.Fatalf("%s: %v %v", what, ps, err)
		}
		if ps := manifest.Check(doc, current, false, noEnv); len(ps) > 0 {
			t.Fatalf("%s: the file's check: %v", what, ps)
		}
		p := manifest.MakePlan(doc, current, false, noEnv)
		err = apply.Apply(t.Context(), p.Changes, noEnv, io.Discard)
		if err == nil || !strings.Contains(err.Error(), entry[1]) {
			t.Errorf("apply naming %s: %v; want it refused saying %q", what, err, entry[1])
		}
	}

	fileAfter, err := os.ReadFile(ordersFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(fileAfter) != string(fileBefore) {
		t.Errorf("orders' local.settings.json changed:\n%s", fileAfter)
	}
	armAfter := armSettings.Get()
	if len(armAfter) != len(armBefore) {
		t.Errorf("orders' ARM settings changed: %v", armAfter)
	}
	for k, v := range armBefore {
		if armAfter[k] != v {
			t.Errorf("orders' ARM setting %s changed to %q", k, armAfter[k])
		}
	}
}
