package funcapp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/teams"
)

const (
	ordersSub    = "00000000-0000-4000-8000-00000000a001"
	billingSub   = "00000000-0000-4000-8000-00000000b001"
	azuriteConn  = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
	otherAccount = "https://ordersstore.blob.core.windows.net"
)

// scopedRegistry is a registry whose teams have scopes: orders its
// subscription's rg-orders, billing its own subscription.
func scopedRegistry(t *testing.T) *funcapp.Registry {
	t.Helper()
	r, store, _ := newRegistry(t)
	orders, _ := teams.ParseScopes("/subscriptions/" + ordersSub + "/resourceGroups/rg-orders")
	billing, _ := teams.ParseScopes(billingSub)
	ts := []teams.Team{{Name: "orders", Scopes: orders}, {Name: "billing", Scopes: billing}}
	r.Teams = func(context.Context) ([]teams.Team, error) { return ts, nil }
	r.Development, r.Endpoints = true, egress.Endpoints{Development: true}
	r.Apps, r.Targets = store.Apps.List, store.Apps
	r.AppSettings = switches.Router{Local: switches.Local{Where: localsettings.Where{Anywhere: true}}}
	return r
}

func as(t *testing.T, team string) context.Context {
	return auth.WithPrincipal(t.Context(), auth.Principal{Name: team + "-op", Teams: map[string]auth.Role{team: auth.RoleOperator}})
}

// localApp writes a local.settings.json whose host storage is Azurite.
func localApp(t *testing.T, id, team string) circuit.App {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "local.settings.json")
	if err := os.WriteFile(path, []byte(`{"IsEncrypted": false, "Values": {"AzureWebJobsStorage": "`+azuriteConn+`", "Hub": "Endpoint=sb://orders-ns.servicebus.windows.net/;SharedAccessKeyName=l;SharedAccessKey=k"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return circuit.App{ID: id, Team: team, Switch: circuit.SwitchLocal, LocalSettings: path}
}

func problemOf(err error, field string) string {
	var v circuit.ValidationError
	if errors.As(err, &v) {
		for _, f := range v {
			if f.Field == field {
				return f.Message
			}
		}
	}
	return ""
}

// TestATeamReachesOnlyItsScopes: billing's operator can register an app
// in its own subscription, but not in orders' resource group, nor an app
// of orders; the refusal names the scope that is missing.
func TestATeamReachesOnlyItsScopes(t *testing.T) {
	r := scopedRegistry(t)
	billing := as(t, "billing")
	own := circuit.App{ID: "billing-prod", Team: "billing", Switch: circuit.SwitchARM, SubscriptionID: billingSub, ResourceGroup: "rg-any", Site: "func-billing"}
	if _, err := r.Register(billing, own, "bianca"); err != nil {
		t.Fatalf("billing's own subscription: %v", err)
	}
	theirs := circuit.App{ID: "billing-alias", Team: "billing", Switch: circuit.SwitchARM, SubscriptionID: strings.ToUpper(ordersSub), ResourceGroup: "RG-Orders", Site: "func-orders"}
	_, err := r.Register(billing, theirs, "bianca")
	if msg := problemOf(err, "site"); !strings.Contains(msg, "/subscriptions/"+ordersSub+"/resourceGroups/rg-orders is not in team billing's scopes") {
		t.Errorf("orders' resource group: %v; want the missing scope named", err)
	}
	theirs.Team = "orders"
	if _, err := r.Register(billing, theirs, "bianca"); problemOf(err, "team") == "" {
		t.Errorf("an app put in orders by billing's operator: %v; want a team problem", err)
	}
	if _, err := r.Register(as(t, "orders"), theirs, "oscar"); err != nil {
		t.Errorf("orders in its own resource group: %v", err)
	}
	if _, err := r.Register(t.Context(), circuit.App{ID: "nobody", Team: "billing", Switch: circuit.SwitchARM, SubscriptionID: billingSub, ResourceGroup: "rg", Site: "s"}, "?"); !errors.Is(err, funcapp.ErrNoPrincipal) {
		t.Errorf("no principal: %v; want refused", err)
	}
}

// TestATargetBelongsToOneApp: a second app naming a site (in any case) or
// a local settings file (through a link) already registered is refused,
// and of two registrations of one target at once exactly one succeeds.
func TestATargetBelongsToOneApp(t *testing.T) {
	r := scopedRegistry(t)
	orders := localApp(t, "orders-demo", "orders")
	if _, err := r.Register(as(t, "orders"), orders, "oscar"); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(filepath.Dir(orders.LocalSettings), link); err != nil {
		t.Fatal(err)
	}
	alias := circuit.App{ID: "billing-alias", Team: "billing", Switch: circuit.SwitchLocal, LocalSettings: filepath.Join(link, "local.settings.json")}
	_, err := r.Register(as(t, "billing"), alias, "bianca")
	if msg := problemOf(err, "local_settings"); !strings.Contains(msg, "another app is registered for this local settings file") {
		t.Errorf("orders' settings file through a link: %v; want it refused as taken", err)
	}
	if strings.Contains(problemOf(err, "local_settings"), "orders-demo") {
		t.Errorf("the refusal names orders' app to billing: %v", err)
	}

	site := circuit.App{Team: "billing", Switch: circuit.SwitchARM, SubscriptionID: billingSub, ResourceGroup: "rg", Site: "func-pay", Slot: "staging"}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		a := site
		a.ID = []string{"pay-a", "pay-b"}[i]
		if i == 1 {
			a.Site, a.ResourceGroup = "FUNC-PAY", "RG"
		}
		wg.Go(func() { _, errs[i] = r.Register(as(t, "billing"), a, "bianca") })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Errorf("two registrations of one slot at once: %v and %v; want exactly one", errs[0], errs[1])
	}
}

// TestHostStorageIsTheAppsOwn: an operator may have Fusebox's identity
// read only the storage account and Event Hubs namespace the app's own
// settings name, or one it holds a key of; never an account or namespace
// another team's app reads; an admin may name any.
func TestHostStorageIsTheAppsOwn(t *testing.T) {
	r := scopedRegistry(t)
	app := localApp(t, "billing-local", "billing")
	foreign := app
	foreign.HostStorage, foreign.EventHubs = otherAccount, "other-ns.servicebus.windows.net"
	_, err := r.Register(as(t, "billing"), foreign, "bianca")
	if problemOf(err, "host_storage") == "" || problemOf(err, "event_hubs") == "" {
		t.Fatalf("another account and namespace: %v; want both refused", err)
	}
	app.HostStorage, app.EventHubs = azuriteConn, "orders-ns.servicebus.windows.net"
	reg, err := r.Register(as(t, "billing"), app, "bianca")
	if err != nil {
		t.Fatalf("the app's own storage and namespace: %v", err)
	}
	if _, err := r.UpdateHost(as(t, "billing"), reg.App, funcapp.HostChange{HostStorage: otherAccount}, "bianca"); problemOf(err, "host_storage") == "" {
		t.Errorf("changed to another account by its operator: %v; want refused", err)
	}
	if _, err := r.UpdateHost(auth.WithPrincipal(t.Context(), auth.Principal{Name: "ada", Role: auth.RoleAdmin}), reg.App, funcapp.HostChange{HostStorage: otherAccount}, "ada"); err != nil {
		t.Errorf("an admin naming another account: %v", err)
	}

	orders := localApp(t, "orders-local", "orders")
	orders.HostStorage = azuriteConn
	if _, err := r.Register(as(t, "orders"), orders, "oscar"); err != nil {
		t.Fatal(err)
	}
	keyed := localApp(t, "billing-keyed", "billing")
	keyed.HostStorage = azuriteConn
	if _, err := r.Register(as(t, "billing"), keyed, "bianca"); !strings.Contains(problemOf(err, "host_storage"), "host storage of another team's app") {
		t.Errorf("orders' account, with its key: %v; want refused as another team's", err)
	}
	keyed.HostStorage = ""
	keyed.EventHubs = "Endpoint=sb://keyed-ns.servicebus.windows.net/;SharedAccessKeyName=l;SharedAccessKey=k"
	if _, err := r.Register(as(t, "billing"), keyed, "bianca"); err != nil {
		t.Errorf("a namespace no app reads, with its key (the settings may hold a Key Vault reference): %v", err)
	}
}

// TestNarrowedScopesStopChangesAndAMoveIsNotUndone: once its team's
// scopes no longer reach an app, its operator may not go on changing it;
// a change checked while an admin moved the app keeps the move.
func TestNarrowedScopesStopChangesAndAMoveIsNotUndone(t *testing.T) {
	r, store, _ := newRegistry(t)
	billing, _ := teams.ParseScopes(billingSub)
	ts := []teams.Team{{Name: "billing", Scopes: billing}, {Name: "orders"}}
	r.Teams = func(context.Context) ([]teams.Team, error) { return ts, nil }
	r.Apps, r.Targets = store.Apps.List, store.Apps
	reg, err := r.Register(as(t, "billing"), circuit.App{ID: "billing-prod", Team: "billing", Switch: circuit.SwitchARM, SubscriptionID: billingSub, ResourceGroup: "rg", Site: "s"}, "bianca")
	if err != nil {
		t.Fatal(err)
	}
	ts[0].Scopes = nil
	if _, err := r.UpdateHost(as(t, "billing"), reg.App, funcapp.HostChange{HostID: "billing-host"}, "bianca"); problemOf(err, "site") == "" {
		t.Errorf("a change to an app its team's scopes no longer reach: %v; want refused naming the scope", err)
	}
	ts[0].Scopes = billing

	stale := reg.App
	if err := store.Apps.SetTeam(t.Context(), stale.ID, "orders"); err != nil {
		t.Fatal(err)
	}
	admin := auth.WithPrincipal(t.Context(), auth.Principal{Name: "ada", Role: auth.RoleAdmin})
	if _, err := r.UpdateHost(admin, stale, funcapp.HostChange{HostID: "billing-host"}, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReplaceKey(admin, stale, "ada"); err != nil {
		t.Fatal(err)
	}
	got, err := store.Apps.Get(t.Context(), stale.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Team != "orders" || got.HostID != "billing-host" {
		t.Errorf("after a change read before the move: team %q, host id %q; want orders and the change", got.Team, got.HostID)
	}
}

// TestAnAppIDIsTheTeamsOwn: billing's operator registering an app with
// the id orders' app has gets billing's own id, as for any free id, so
// whether orders uses an id never shows; an id whose dot names orders is
// refused; an admin names as given.
func TestAnAppIDIsTheTeamsOwn(t *testing.T) {
	r := scopedRegistry(t)
	orders := circuit.App{ID: "shop", Team: "orders", Switch: circuit.SwitchARM, SubscriptionID: ordersSub, ResourceGroup: "rg-orders", Site: "func-shop"}
	reg, err := r.Register(as(t, "orders"), orders, "oscar")
	if err != nil {
		t.Fatal(err)
	}
	if reg.App.ID != "orders.shop" {
		t.Errorf("orders' operator's app shop is named %q; want orders.shop", reg.App.ID)
	}
	same := circuit.App{ID: "shop", Team: "billing", Switch: circuit.SwitchARM, SubscriptionID: billingSub, ResourceGroup: "rg", Site: "func-shop"}
	if reg, err = r.Register(as(t, "billing"), same, "bianca"); err != nil || reg.App.ID != "billing.shop" {
		t.Errorf("billing's operator's app shop: %q, %v; want billing.shop, registered", reg.App.ID, err)
	}
	same.ID, same.Site = "orders.till", "func-till"
	if _, err := r.Register(as(t, "billing"), same, "bianca"); !strings.Contains(problemOf(err, "id"), "begins with its team: billing.till") {
		t.Errorf("billing's operator naming orders.till: %v; want the id refused, saying billing.till", err)
	}
	admin := auth.WithPrincipal(t.Context(), auth.Principal{Name: "ada", Role: auth.RoleAdmin})
	// Moved, billing.shop would read as billing's in orders and block the
	// name in billing: even an admin registers it anew instead.
	toOrders := "orders"
	if _, err := r.Update(admin, reg.App, funcapp.Settings{Team: &toOrders, DisplayName: reg.App.DisplayName, Linux: reg.App.Linux, Guardrail: reg.App.Guardrail, Channels: reg.App.Channels, Escalate: reg.App.Escalate}, "ada"); !strings.Contains(problemOf(err, "id"), "names another team") {
		t.Errorf("an admin moving billing.shop to orders: %v; want it refused", err)
	}
	same.ID, same.Site = "till", "func-till"
	if reg, err = r.Register(admin, same, "ada"); err != nil || reg.App.ID != "till" {
		t.Errorf("an admin's app till: %q, %v; want till as given", reg.App.ID, err)
	}
}
