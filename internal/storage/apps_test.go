package storage_test

import (
	"testing"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// An Application Insights id written by hand that is not a GUID costs the
// app its links, not its registration: the app still reads, without it.
func TestAHandWrittenInsightsAppIDCostsOnlyTheLinks(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableApps); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	if err := st.Apps.Put(t.Context(), circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: "/tmp/local.settings.json", InsightsAppID: `"><script>`}); err != nil {
		t.Fatal(err)
	}
	app, err := st.Apps.Get(t.Context(), "orders")
	if err != nil || app.InsightsAppID != "" || app.LocalSettings != "/tmp/local.settings.json" {
		t.Fatalf("app %+v, err %v; want it read, without the id", app, err)
	}
}
