package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

// An operator points a registered app at its Event Hubs, later replaces
// its host storage and then stops reading it; the secrets are never shown
// back nor written to the audit log, which says what changed.
func TestAnOperatorChangesWhatIsReadOfAnAppsHost(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	wantStatus(t, viewer.get("/apps/"+demo.AppID+"/host/edit"), http.StatusForbidden)

	op := newBrowser(t, srv.URL)
	op.signIn("olivia")
	form := "/apps/" + demo.AppID + "/host/edit"
	hubs := "Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=c2VjcmV0LWh1Yi1rZXk="
	post := func(v url.Values) response {
		t.Helper()
		v.Set("_csrf", op.csrf(form))
		return op.post(form, v)
	}
	bad := post(url.Values{"event_hubs": {"Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=listen"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if !strings.Contains(bad.body, "Listen rights") {
		t.Errorf("a connection string without a key is refused without saying why")
	}
	// A host id names folders of the app's storage: one with a slash would
	// read another host's blobs.
	if r := post(url.Values{"host_id": {"orders/other"}}); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, "lower-case letters, digits or dashes") {
		t.Errorf("host id orders/other: status %d, want 422 saying what a host id is", r.StatusCode)
	}
	wantStatus(t, post(url.Values{"event_hubs": {hubs}, "host_id": {"orders-host"}}), http.StatusSeeOther)
	app, err := srv.App.Store.Apps.Get(t.Context(), demo.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if app.EventHubs != hubs || app.HostID != "orders-host" {
		t.Fatalf("after saving: event hubs %q, host id %q", app.EventHubs, app.HostID)
	}
	page := op.get(form).body
	if strings.Contains(page, "c2VjcmV0LWh1Yi1rZXk=") || !strings.Contains(page, "now set") {
		t.Error("the form shows the Event Hubs secret, or does not say it is set")
	}
	// An empty field keeps the secret; the checkbox clears it.
	wantStatus(t, post(url.Values{"host_id": {"orders-host"}, "host_storage": {"DefaultEndpointsProtocol=https;AccountName=ordersfn;AccountKey=c3RvcmFnZS1rZXk=;EndpointSuffix=core.windows.net"}}), http.StatusSeeOther)
	wantStatus(t, post(url.Values{"host_id": {"orders-host"}, "clear_host_storage": {"on"}}), http.StatusSeeOther)
	if app, err = srv.App.Store.Apps.Get(t.Context(), demo.AppID); err != nil {
		t.Fatal(err)
	}
	if app.EventHubs != hubs || app.HostStorage != "" {
		t.Errorf("event hubs kept %v, host storage cleared %v", app.EventHubs == hubs, app.HostStorage == "")
	}
	log := op.get("/audit").body
	for _, want := range []string{"Event Hubs replaced", `host id &#34;orders-host&#34;`, "host storage replaced", "host storage cleared"} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %q", want)
		}
	}
	if strings.Contains(log, "c2VjcmV0LWh1Yi1rZXk=") || strings.Contains(log, "c3RvcmFnZS1rZXk=") {
		t.Error("the audit log holds a secret")
	}
}

// An app's Event Hubs circuits that choose no way back get the app's:
// set on its Host insight form, kept, audited; a value that names no way
// back is refused.
func TestAnAppChoosesTheWayBackOfferedFirst(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	op := newBrowser(t, srv.URL)
	op.signIn("olivia")
	form := "/apps/" + demo.AppID + "/host/edit"
	post := func(v url.Values) response {
		t.Helper()
		v.Set("_csrf", op.csrf(form))
		return op.post(form, v)
	}
	if r := post(url.Values{"resume_from": {"rewind"}}); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, "checkpoint") {
		t.Errorf("resume_from rewind: status %d, want 422 naming the ways back", r.StatusCode)
	}
	wantStatus(t, post(url.Values{"resume_from": {"checkpoint"}}), http.StatusSeeOther)
	app, err := srv.App.Store.Apps.Get(t.Context(), demo.AppID)
	if err != nil || app.ResumeFrom != "checkpoint" {
		t.Fatalf("after saving: %q, %v", app.ResumeFrom, err)
	}
	if page := op.get(form).body; !strings.Contains(page, `<option value="checkpoint" selected>`) {
		t.Error("the form does not show the app's choice")
	}
	if !strings.Contains(op.get("/audit").body, "resume where it stopped first") {
		t.Error("the audit log does not say what changed")
	}
}
