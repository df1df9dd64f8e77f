package funcapp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
)

type forgotten map[string]bool

func (f forgotten) Forget(appID string) { f[appID] = true }

func newRegistry(t *testing.T) (*funcapp.Registry, *storage.Store, forgotten) {
	t.Helper()
	svc, _ := testenv.Storage(t)
	for _, table := range []string{storage.TableApps, storage.TableChannels, storage.TableAudit} {
		if err := svc.CreateTable(t.Context(), table); err != nil {
			t.Fatal(err)
		}
	}
	store := storage.New(svc)
	keys := forgotten{}
	return &funcapp.Registry{Store: store.Apps, Channels: alerts.KnownChannels{Channels: store.Channels},
		Local: localsettings.Where{Anywhere: true}, Keys: keys, Audit: store.Audit,
		Now: func() time.Time { return time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC) }}, store, keys
}

func field(err error) string {
	var v circuit.ValidationError
	if !errors.As(err, &v) || len(v) == 0 {
		return ""
	}
	return v[0].Field
}

func TestRegistrationKeepsItsRules(t *testing.T) {
	r, store, keys := newRegistry(t)
	ctx := auth.WithPrincipal(t.Context(), auth.System)
	app := circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/local.settings.json"}

	named := app
	named.Channels = []string{"ops-teams"}
	if _, err := r.Register(ctx, named, "ada"); field(err) != "channels" {
		t.Errorf("a channel that does not exist: %v, want a channels problem", err)
	}
	reg, err := r.Register(ctx, app, "ada")
	if err != nil {
		t.Fatal(err)
	}
	if !auth.AppKeyMatches(reg.Key, reg.App.APIKeyHash) || auth.AppOfKey(reg.Key) != "orders" {
		t.Errorf("the key shown does not verify for orders: %q", reg.Key)
	}
	if _, err := r.Register(ctx, app, "bob"); field(err) != "id" {
		t.Errorf("the same id again: %v, want an id problem", err)
	}

	key, err := r.ReplaceKey(ctx, reg.App, "ada")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := store.Apps.Get(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if auth.AppKeyMatches(reg.Key, stored.APIKeyHash) || !auth.AppKeyMatches(key, stored.APIKeyHash) {
		t.Error("after a replace the old key still verifies, or the new one does not")
	}
	if !keys["orders"] {
		t.Error("the replaced key was not forgotten by this instance's cache")
	}

	changed, err := r.UpdateHost(ctx, stored, funcapp.HostChange{HostID: stored.HostID}, "ada")
	if err != nil || changed != nil {
		t.Errorf("nothing changed: %v, %v, want nothing written", changed, err)
	}
	if _, err := r.UpdateHost(ctx, stored, funcapp.HostChange{SetAsideLimit: "lots"}, "ada"); field(err) != "set_aside_limit" {
		t.Errorf("a limit that is no number: %v", err)
	}
	changed, err = r.UpdateHost(ctx, stored, funcapp.HostChange{SetAsideLimit: "50", HostID: "orders-host"}, "ada")
	if err != nil || len(changed) != 2 {
		t.Fatalf("limit and host id: %v, %v", changed, err)
	}
	entries, err := store.Audit.Recent(ctx, time.Date(2026, 12, 3, 9, 0, 1, 0, time.UTC), 10)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	want := map[string]bool{"registered app": true, "replaced app key": true, "changed host insight": true}
	if len(actions) != len(want) {
		t.Errorf("audited %q, want one each of registered, replaced and changed", actions)
	}
	for _, a := range actions {
		if !want[a] {
			t.Errorf("audited %q", a)
		}
	}
}

func TestParseGuardrail(t *testing.T) {
	g, err := funcapp.ParseGuardrail("3", "50%")
	if err != nil || g.MaxOff != 3 || g.MaxShare != 0.5 {
		t.Errorf("3 and 50%%: %+v, %v", g, err)
	}
	if _, err := funcapp.ParseGuardrail("three", ""); field(err) != "guardrail_max" {
		t.Errorf("three: %v", err)
	}
	if _, err := funcapp.ParseGuardrail("", "half"); field(err) != "guardrail_share" {
		t.Errorf("half: %v", err)
	}
	if g, err := funcapp.ParseGuardrail("", ""); err != nil || g != (circuit.Guardrail{}) {
		t.Errorf("empty: %+v, %v", g, err)
	}
}
