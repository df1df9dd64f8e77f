package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

func TestOperatorCreatesEditsAndDeletesACircuitWithForms(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	form := func(v url.Values) url.Values { v.Set("_csrf", b.csrf("/circuits/new")); return v }

	bad := b.post("/circuits/new", form(url.Values{"app": {demo.AppID}, "function": {"Ship Parcels"}, "threshold": {"lots"}, "window": {"soon"}}))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, want := range []string{"must be a whole number", "must be a duration"} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("the form does not say %q", want)
		}
	}
	if !strings.Contains(bad.body, `value="Ship Parcels"`) {
		t.Error("the form lost what was typed")
	}
	invalid := b.post("/circuits/new", form(url.Values{"app": {demo.AppID}, "function": {"Ship Parcels"}, "threshold": {"0"}, "window": {"30s"}}))
	wantStatus(t, invalid, http.StatusUnprocessableEntity)
	if !strings.Contains(invalid.body, "must be a function name") || !strings.Contains(invalid.body, "at least 1") {
		t.Errorf("validation messages missing: %s", invalid.body)
	}

	ok := b.post("/circuits/new", form(url.Values{"app": {demo.AppID}, "function": {"ShipParcels"}, "threshold": {"25"}, "window": {"1m"},
		"recipients": {"ops@example.com, lead@example.com"}, "auto_resume": {"on"}, "cooldown": {"10m"}}))
	wantStatus(t, ok, http.StatusSeeOther)
	if loc := ok.Header.Get("Location"); loc != "/circuits/orders-demo/ShipParcels" {
		t.Fatalf("created, then sent to %q", loc)
	}
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ShipParcels")
	if err != nil {
		t.Fatal(err)
	}
	if c.Threshold != 25 || c.Window != time.Minute || len(c.Recipients) != 2 || !c.Policy.AutoResume || c.Policy.Cooldown != 10*time.Minute {
		t.Errorf("stored circuit = %+v", c)
	}

	edit := b.get("/circuits/orders-demo/ShipParcels/edit")
	wantStatus(t, edit, http.StatusOK)
	if !strings.Contains(edit.body, `value="25"`) || !strings.Contains(edit.body, `value="1m"`) {
		t.Error("the edit form is not filled in")
	}
	saved := b.post("/circuits/orders-demo/ShipParcels/edit", form(url.Values{"threshold": {"40"}, "window": {"2m"}, "recipients": {""}}))
	wantStatus(t, saved, http.StatusSeeOther)
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ShipParcels"); c.Threshold != 40 || c.Window != 2*time.Minute || c.Policy.AutoResume {
		t.Errorf("after edit: %+v", c)
	}

	wantStatus(t, b.post("/circuits/orders-demo/SyncInventory/delete", form(url.Values{})), http.StatusConflict)
	wantStatus(t, b.post("/circuits/orders-demo/ShipParcels/delete", form(url.Values{})), http.StatusSeeOther)
	wantStatus(t, b.get("/circuits/orders-demo/ShipParcels"), http.StatusNotFound)
	if a := b.get("/audit").body; !strings.Contains(a, "created circuit") || !strings.Contains(a, "changed circuit") || !strings.Contains(a, "deleted circuit") {
		t.Error("the audit log lacks the settings changes")
	}

	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	wantStatus(t, viewer.get("/circuits/new"), http.StatusForbidden)
}

func TestOperatorRegistersAnAppAndItsKeyWorks(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	csrf := b.csrf("/apps/new")
	bad := b.post("/apps/new", url.Values{"_csrf": {csrf}, "id": {"Orders Prod"}, "switch": {"arm"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if !strings.Contains(bad.body, "lower-case letters") || !strings.Contains(bad.body, "needs the subscription id") {
		t.Errorf("registration errors missing: %s", bad.body)
	}
	dup := b.post("/apps/new", url.Values{"_csrf": {csrf}, "id": {demo.AppID}, "switch": {"local"}, "local_settings": {"/tmp/x/local.settings.json"}})
	wantStatus(t, dup, http.StatusUnprocessableEntity)
	if !strings.Contains(dup.body, "an app with this id is registered already") {
		t.Errorf("a taken id: %s", dup.body)
	}
	// Two operators register one new id at once: one gets the key, the
	// other is told it is taken; neither key is overwritten by the other.
	other := newBrowser(t, srv.URL)
	other.signIn("olivia")
	statuses := make(chan int, 2)
	for _, br := range []*browser{b, other} {
		go func() {
			r := br.post("/apps/new", url.Values{"_csrf": {br.csrf("/apps/new")}, "id": {"orders-race"}, "switch": {"local"}, "local_settings": {"/tmp/race/local.settings.json"}})
			statuses <- r.StatusCode
		}()
	}
	if a, z := <-statuses, <-statuses; a+z != http.StatusOK+http.StatusUnprocessableEntity {
		t.Errorf("two registrations of one id answered %d and %d, want 200 and 422", a, z)
	}

	ok := b.post("/apps/new", url.Values{"_csrf": {csrf}, "id": {"orders-prod"}, "name": {"Orders"}, "switch": {"arm"},
		"subscription": {"00000000-0000-0000-0000-000000000001"}, "resource_group": {"rg-orders"}, "site": {"func-orders"}, "slot": {"staging"}, "linux": {"on"}})
	wantStatus(t, ok, http.StatusOK)
	m := regexp.MustCompile(`data-testid="app-key">(fbx_orders-prod_[A-Za-z0-9_-]+)<`).FindStringSubmatch(ok.body)
	if m == nil {
		t.Fatalf("no key shown: %s", ok.body)
	}
	app, err := srv.App.Store.Apps.Get(t.Context(), "orders-prod")
	if err != nil || app.Slot != "staging" || !app.Linux || app.APIKeyHash == "" || strings.Contains(app.APIKeyHash, m[1]) {
		t.Fatalf("stored app = %+v, %v", app, err)
	}
	wantStatus(t, postJSON(t, srv.URL, m[1], `{"failures": [{"function": "Process"}]}`), http.StatusAccepted)

	again := b.post("/apps/orders-prod/key", url.Values{"_csrf": {b.csrf("/apps")}})
	wantStatus(t, again, http.StatusOK)
	wantStatus(t, postJSON(t, srv.URL, m[1], `{"failures": [{"function": "Process"}]}`), http.StatusUnauthorized)
	if list := b.get("/apps").body; !strings.Contains(list, "orders-prod") || !strings.Contains(list, "slot staging") {
		t.Error("the apps page does not list the new app")
	}
}

// A circuit can trip on a failure ratio; the form says the rule in words
// and names what is wrong with a ratio or minimum that cannot be.
func TestARatioCircuitFromTheForm(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	form := func(v url.Values) url.Values { v.Set("_csrf", b.csrf("/circuits/new")); return v }
	bad := b.post("/circuits/new", form(url.Values{"app": {demo.AppID}, "function": {"ShipParcels"}, "threshold": {"100"}, "window": {"1m"},
		"rule": {"ratio"}, "ratio": {"150"}, "min_calls": {"0"}}))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	for _, want := range []string{"at most 100 % of calls", "must be at least 1: the rule waits for this many calls"} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("the form does not say %q", want)
		}
	}
	ok := b.post("/circuits/new", form(url.Values{"app": {demo.AppID}, "function": {"ShipParcels"}, "threshold": {"100"}, "window": {"1m"},
		"rule": {"ratio"}, "ratio": {"50"}, "min_calls": {"200"}}))
	wantStatus(t, ok, http.StatusSeeOther)
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ShipParcels")
	if err != nil || c.Rule.Ratio != 0.5 || c.Rule.MinCalls != 200 {
		t.Fatalf("stored rule %+v (err %v), want 50 %% once 200 calls", c.Rule, err)
	}
	edit := b.get("/circuits/orders-demo/ShipParcels/edit")
	if !strings.Contains(edit.body, "Trips when 50 % of calls fail within 1m, once 200 calls happened in it.") || !strings.Contains(edit.body, `value="ratio" checked`) {
		t.Errorf("the edit form does not show the ratio rule:\n%s", edit.body)
	}
}

// The no-success rule is a box on the form beside either rule; it is
// stored, previewed in words, shown again on the edit form and in the API.
func TestTheNoSuccessRuleFromTheFormAndTheAPI(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	ok := b.post("/circuits/new", url.Values{"_csrf": {b.csrf("/circuits/new")}, "app": {demo.AppID}, "function": {"NightlyExport"},
		"threshold": {"100"}, "window": {"10m"}, "rule": {"count"}, "no_success": {"on"}})
	wantStatus(t, ok, http.StatusSeeOther)
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "NightlyExport")
	if err != nil || !c.Rule.NoSuccess {
		t.Fatalf("stored rule %+v (err %v), want the no-success rule", c.Rule, err)
	}
	edit := b.get("/circuits/orders-demo/NightlyExport/edit")
	if !strings.Contains(edit.body, "or when calls fail and none succeeds for a whole 10m.") || !strings.Contains(edit.body, `name="no_success" value="on" checked`) {
		t.Errorf("the edit form does not show the no-success rule:\n%s", edit.body)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/circuits/orders-demo/NightlyExport", nil)
	req.Header.Set("Accept", "application/json")
	if got := b.do(req); !strings.Contains(got.body, `"no_success":true`) {
		t.Errorf("the API does not show the rule: %s", got.body)
	}
}

// A form naming a channel that does not exist is refused with that
// message beside the field, whether or not the form has other problems,
// and nothing is created.
func TestTheCircuitFormSaysWhichChannelDoesNotExist(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	form := func(v url.Values) url.Values { v.Set("_csrf", b.csrf("/circuits/new")); return v }
	for name, threshold := range map[string]string{"otherwise valid": "25", "with another problem": "lots"} {
		r := b.post("/circuits/new", form(url.Values{"app": {demo.AppID}, "function": {"ShipParcels"}, "threshold": {threshold}, "window": {"1m"}, "channels": {"nope"}}))
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(r.body, "there is no channel &#34;nope&#34;") && !strings.Contains(r.body, `there is no channel "nope"`) {
			t.Errorf("%s: the form does not name the missing channel", name)
		}
	}
	if _, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ShipParcels"); err == nil {
		t.Error("a circuit naming a missing channel was created")
	}
}
