package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/demo"
)

func TestResumeLinksThatMustNotWork(t *testing.T) {
	srv, _ := seeded(t)
	signer := srv.App.Web.Links
	open := func(l alerts.Link) string { return "/resume/" + signer.Sign(l) }
	now := srv.Clock.Now()
	good := alerts.Link{Circuit: demo.AppID + "/SyncInventory", Episode: 3, Action: "resume", Recipient: "oncall@example.com", Expires: now.Add(time.Hour)}
	other, _ := alerts.NewSigner("x", map[string][]byte{"x": []byte(strings.Repeat("z", 32))})

	tests := []struct {
		name   string
		path   string
		status int
		says   string
	}{
		{"expired", open(alerts.Link{Circuit: good.Circuit, Episode: 3, Action: "resume", Recipient: good.Recipient, Expires: now.Add(-time.Second)}), http.StatusGone, "has expired"},
		{"tampered", open(good)[:len(open(good))-3] + "abc", http.StatusBadRequest, "not a valid Fusebox resume link"},
		{"made by another Fusebox", "/resume/" + other.Sign(good), http.StatusBadRequest, "not a valid Fusebox resume link"},
		{"for an ended episode", open(alerts.Link{Circuit: good.Circuit, Episode: 2, Action: "resume", Recipient: good.Recipient, Expires: now.Add(time.Hour)}), http.StatusGone, "has ended"},
		{"for a closed circuit", open(alerts.Link{Circuit: demo.AppID + "/ProcessOrders", Episode: 0 + 1, Action: "resume", Recipient: good.Recipient, Expires: now.Add(time.Hour)}), http.StatusGone, "has ended"},
		{"for a deleted circuit", open(alerts.Link{Circuit: demo.AppID + "/Gone", Episode: 1, Action: "resume", Recipient: good.Recipient, Expires: now.Add(time.Hour)}), http.StatusGone, "no longer exists"},
		{"garbage", "/resume/hello", http.StatusBadRequest, "not a valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBrowser(t, srv.URL)
			r := b.get(tt.path)
			wantStatus(t, r, tt.status)
			if !strings.Contains(r.body, tt.says) {
				t.Errorf("page does not say %q", tt.says)
			}
			post := b.post(tt.path, url.Values{"_csrf": {b.csrf("/login")}})
			if post.StatusCode < 400 {
				t.Errorf("POST got %d", post.StatusCode)
			}
		})
	}

	// A good link shows the circuit; only a POST with the page's CSRF token acts.
	b := newBrowser(t, srv.URL)
	page := b.get(open(good))
	wantStatus(t, page, http.StatusOK)
	wantStatus(t, b.post(open(good), url.Values{}), http.StatusForbidden)
	done := b.post(open(good), url.Values{"_csrf": {b.csrf(open(good))}})
	wantStatus(t, done, http.StatusOK)
	if !strings.Contains(done.body, "is resuming") {
		t.Errorf("after the POST: %s", done.body)
	}
	wantStatus(t, b.post(open(good), url.Values{"_csrf": {b.csrf("/login")}}), http.StatusGone)
}
