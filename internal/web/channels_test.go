package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// Channels through the API: the secret is shown once, URLs never again,
// bad input gets a message per field, and circuits cannot name a channel
// that does not exist.
func TestAPIChannels(t *testing.T) {
	t.Parallel()
	srv, op, viewer := apiServer(t)
	got := make(chan string, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	body := `{"id": "pager", "name": "Pager", "kind": "webhook", "url": "` + recv.URL + `/hook/SECRETPATH"}`
	wantStatus(t, viewer.call(http.MethodPost, "/api/v1/channels", body), http.StatusForbidden)
	created := op.call(http.MethodPost, "/api/v1/channels", body)
	wantStatus(t, created, http.StatusCreated)
	var ch struct{ ID, URL, Secret string }
	if err := json.Unmarshal([]byte(created.body), &ch); err != nil || !strings.HasPrefix(ch.Secret, "whsec_") {
		t.Fatalf("created %s (err %v): want the new secret once", created.body, err)
	}
	for _, path := range []string{"/api/v1/channels"} {
		list := viewer.call(http.MethodGet, path, "")
		wantStatus(t, list, http.StatusOK)
		if strings.Contains(list.body, "SECRETPATH") || strings.Contains(list.body, ch.Secret) || !strings.Contains(list.body, `"id":"pager"`) {
			t.Errorf("the list shows a secret or lacks the channel: %s", list.body)
		}
	}
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	if page := b.get("/channels").body; strings.Contains(page, "SECRETPATH") || !strings.Contains(page, "Pager") {
		t.Errorf("the channels page shows the secret path to a viewer, or not the channel")
	}

	test := op.call(http.MethodPost, "/api/v1/channels/pager/test", "")
	wantStatus(t, test, http.StatusOK)
	if b := <-got; !strings.Contains(b, `"type":"test"`) {
		t.Errorf("the receiver got %s", b)
	}

	for name, tc := range map[string]struct{ body, field string }{
		"http to another host": {`{"id": "leaky", "name": "Leaky", "kind": "slack", "url": "http://hooks.example.com/x"}`, "url"},
		"unknown kind":         {`{"id": "pigeon", "name": "Pigeon", "kind": "pigeon"}`, "kind"},
		"mail without list":    {`{"id": "nobody", "name": "Nobody", "kind": "mail"}`, "addresses"},
		"bad id":               {`{"id": "Bad Id", "name": "x", "kind": "mail", "addresses": ["a@example.com"]}`, "id"},
		"taken id":             {body, "id"},
	} {
		r := op.call(http.MethodPost, "/api/v1/channels", tc.body)
		if r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, `"`+tc.field+`"`) {
			t.Errorf("%s: %d %s, want 422 naming %s", name, r.StatusCode, r.body, tc.field)
		}
	}

	circuit := `{"app": "orders-demo", "function": "ShipParcels", "threshold": 25, "window_seconds": 60, "channels": ["nope"]}`
	if r := op.call(http.MethodPost, "/api/v1/circuits", circuit); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, `there is no channel \"nope\"`) {
		t.Errorf("circuit naming an unknown channel: %d %s", r.StatusCode, r.body)
	}
	circuit = strings.Replace(circuit, `"nope"`, `"pager"`, 1)
	if r := op.call(http.MethodPost, "/api/v1/circuits", circuit); r.StatusCode != http.StatusCreated || !strings.Contains(r.body, `"channels":["pager"]`) {
		t.Errorf("circuit naming pager: %d %s", r.StatusCode, r.body)
	}

	// A new secret: shown once, and the old one still signs for a day.
	rotated := op.call(http.MethodPut, "/api/v1/channels/pager", `{"name": "Pager", "rotate": true}`)
	wantStatus(t, rotated, http.StatusOK)
	var again struct{ Secret string }
	_ = json.Unmarshal([]byte(rotated.body), &again)
	if !strings.HasPrefix(again.Secret, "whsec_") || again.Secret == ch.Secret {
		t.Errorf("rotation answered %s", rotated.body)
	}
	stored, err := srv.App.Store.Channels.Get(t.Context(), "pager")
	if err != nil || stored.OldSecret != ch.Secret || stored.URL != recv.URL+"/hook/SECRETPATH" {
		t.Errorf("after rotation: %+v (err %v): want the old secret kept and the URL unchanged", stored, err)
	}
	wantStatus(t, op.call(http.MethodDelete, "/api/v1/channels/pager", ""), http.StatusNoContent)
	wantStatus(t, op.call(http.MethodPost, "/api/v1/channels/pager/test", ""), http.StatusNotFound)
}

// A PagerDuty channel: the key is taken, never answered or shown, kept on
// an edit that leaves it out, and the endpoint is PagerDuty's own (the US
// region when left out); an escalation may name it.
func TestAPIOnCallChannelsKeepTheirKey(t *testing.T) {
	t.Parallel()
	srv, op, viewer := apiServer(t)
	const key = "R0123456789abcdefABCDEF012345678"
	created := op.call(http.MethodPost, "/api/v1/channels", `{"id": "oncall", "name": "Orders on call", "kind": "pagerduty", "key": "`+key+`"}`)
	wantStatus(t, created, http.StatusCreated)
	renamed := op.call(http.MethodPut, "/api/v1/channels/oncall", `{"name": "Orders, on call"}`)
	wantStatus(t, renamed, http.StatusOK)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	for what, body := range map[string]string{"create": created.body, "update": renamed.body, "list": viewer.call(http.MethodGet, "/api/v1/channels", "").body,
		"edit page": b.get("/channels/oncall/edit").body, "channels page": b.get("/channels").body} {
		if strings.Contains(body, key) {
			t.Errorf("the %s shows the integration key", what)
		}
	}
	stored, err := srv.App.Store.Channels.Get(t.Context(), "oncall")
	if err != nil || stored.Secret != key || stored.URL != "https://events.pagerduty.com/v2/enqueue" || stored.Name != "Orders, on call" {
		t.Errorf("stored %s %s, key kept %v (err %v): want the key kept and PagerDuty's US endpoint", stored.Name, stored.URL, stored.Secret == key, err)
	}
	for name, body := range map[string]string{
		"another host":  `{"id": "pd2", "name": "x", "kind": "pagerduty", "key": "` + key + `", "url": "https://collector.example/v2/enqueue"}`,
		"no key":        `{"id": "pd3", "name": "x", "kind": "pagerduty"}`,
		"opsgenie key":  `{"id": "og1", "name": "x", "kind": "opsgenie", "key": "` + key + `"}`,
		"opsgenie host": `{"id": "og2", "name": "x", "kind": "opsgenie", "key": "0f2c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01", "url": "https://10.0.0.4"}`,
	} {
		if r := op.call(http.MethodPost, "/api/v1/channels", body); r.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s; want 422", name, r.StatusCode, r.body)
		}
	}
	circuit := `{"app": "orders-demo", "function": "ShipParcels", "threshold": 25, "window_seconds": 60, "escalate_to": ["oncall", "lead@example.com"], "escalate_after_seconds": 1800}`
	if r := op.call(http.MethodPost, "/api/v1/circuits", circuit); r.StatusCode != http.StatusCreated || !strings.Contains(r.body, `"escalate_to":["oncall","lead@example.com"]`) {
		t.Errorf("a circuit escalating to the channel: %d %s", r.StatusCode, r.body)
	}
	// The app's default escalation, through the API: its circuits that set
	// none say so.
	var app map[string]any
	if err := json.Unmarshal([]byte(op.call(http.MethodGet, "/api/v1/apps/orders-demo", "").body), &app); err != nil {
		t.Fatal(err)
	}
	app["escalate_to"], app["escalate_after_seconds"] = []string{"nope"}, 900
	bad, _ := json.Marshal(app)
	if r := op.call(http.MethodPut, "/api/v1/apps/orders-demo", string(bad)); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, `"escalate_to"`) {
		t.Errorf("an app escalating to a channel that does not exist: %d %s; want 422 naming escalate_to", r.StatusCode, r.body)
	}
	app["escalate_to"] = []string{"oncall"}
	good, _ := json.Marshal(app)
	wantStatus(t, op.call(http.MethodPut, "/api/v1/apps/orders-demo", string(good)), http.StatusOK)
	if page := b.get("/circuits/orders-demo/ProcessOrders").body; !strings.Contains(page, "oncall, after 15m unacknowledged (the app&#39;s)") {
		i := strings.Index(page, `data-testid="escalation"`)
		t.Errorf("the circuit page does not show the app's escalation: %.200s", page[max(i, 0):])
	}

	circuit = strings.Replace(strings.Replace(circuit, `"oncall"`, `"nope"`, 1), "ShipParcels", "TakeOrders", 1)
	if r := op.call(http.MethodPost, "/api/v1/circuits", circuit); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, `"escalate_to"`) {
		t.Errorf("a circuit escalating to a channel that does not exist: %d %s; want 422 naming escalate_to", r.StatusCode, r.body)
	}
}

// A mail channel's test that the server refuses says what kind of failure
// it was, never the server's reply (which names its own hosts and
// mailboxes), on the API and on the Channels page.
func TestAFailedChannelTestSaysNothingTheServerSaid(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	smtp.RejectRecipients("mailbox unknown on relay-7.internal.corp (secret-route)")
	opToken, opHash := auth.NewAPIToken()
	env := smtp.Env()
	env["FUSEBOX_API_TOKENS"] = "deploy-bot:operator:" + opHash
	srv := apptest.Start(t, env)
	op := apiClient{t, newBrowser(t, srv.URL), opToken}
	wantStatus(t, op.call(http.MethodPost, "/api/v1/channels", `{"id": "ops", "name": "Ops", "kind": "mail", "addresses": ["ops@example.com"]}`), http.StatusCreated)
	test := op.call(http.MethodPost, "/api/v1/channels/ops/test", "")
	wantStatus(t, test, http.StatusBadGateway)
	if strings.Contains(test.body, "relay-7") || strings.Contains(test.body, "secret-route") || !strings.Contains(test.body, "refused it for good") {
		t.Errorf("the API's answer: %s; want the kind of failure and nothing the server said", test.body)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/channels")
	csrf := csrfField.FindStringSubmatch(page.body)[1]
	r := b.post("/channels/ops/test", url.Values{"_csrf": {csrf}})
	if strings.Contains(r.body, "relay-7") || strings.Contains(r.body, "secret-route") || !strings.Contains(r.body, "refused it for good") {
		t.Errorf("the page says %q; want the kind of failure and nothing the server said", r.body)
	}
}
