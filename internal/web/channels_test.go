package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Channels through the API: the secret is shown once, URLs never again,
// bad input gets a message per field, and circuits cannot name a channel
// that does not exist.
func TestAPIChannels(t *testing.T) {
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
