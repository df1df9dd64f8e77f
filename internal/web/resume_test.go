package web_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
)

func TestResumeLinksThatMustNotWork(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	signer := srv.App.Links
	open := func(l alerts.Link) string { return "/resume/" + signer.Sign(l) }
	now := srv.Clock.Now()
	sync, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory")
	if err != nil {
		t.Fatal(err)
	}
	inc := sync.Incarnation
	process, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	good := alerts.Link{Circuit: demo.AppID + "/SyncInventory", Episode: 3, Incarnation: inc, Action: "resume", Recipient: "oncall@example.com", Expires: now.Add(time.Hour)}
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
		{"for an ended episode", open(alerts.Link{Circuit: good.Circuit, Episode: 2, Incarnation: inc, Action: "resume", Recipient: good.Recipient, Expires: now.Add(time.Hour)}), http.StatusGone, "has ended"},
		{"for a circuit deleted and made again", open(alerts.Link{Circuit: good.Circuit, Episode: 3, Incarnation: "an-earlier-one", Action: "resume", Recipient: good.Recipient, Expires: now.Add(time.Hour)}), http.StatusGone, "was deleted"},
		{"for a recipient no longer on the circuit", open(alerts.Link{Circuit: good.Circuit, Episode: 3, Incarnation: inc, Action: "resume", Recipient: "former@example.com", Expires: now.Add(time.Hour)}), http.StatusGone, "no longer receives"},
		{"for a closed circuit", open(alerts.Link{Circuit: demo.AppID + "/ProcessOrders", Episode: 0 + 1, Incarnation: process.Incarnation, Action: "resume", Recipient: good.Recipient, Expires: now.Add(time.Hour)}), http.StatusGone, "has ended"},
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

func TestMailPageShowsStatesAndResends(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.Start(t, smtp.Env())
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(2 * time.Second)
	stop := srv.RunFakeClock()
	first := smtp.Wait(2, 20*time.Second) // SyncInventory (open) and ImportPrices (forced-open)
	stop()
	if len(first) != 2 {
		t.Fatalf("%d mails, want 2", len(first))
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/notifications").body
	if strings.Count(page, ">sent<") != 2 || !strings.Contains(page, "orders-demo/SyncInventory") {
		t.Fatalf("the mail page does not show two sent mails:\n%s", page)
	}
	id := regexp.MustCompile(`name="id" value="([^"]*SyncInventory[^"]*)"`).FindStringSubmatch(page)
	if id == nil {
		t.Fatal("no resend form for SyncInventory")
	}
	r := b.post("/notifications/resend", url.Values{"_csrf": {b.csrf("/notifications")}, "id": {html.UnescapeString(id[1])}})
	wantStatus(t, r, http.StatusSeeOther)
	srv.Clock.Advance(2 * time.Second)
	stop = srv.RunFakeClock()
	defer stop()
	if got := smtp.Wait(3, 20*time.Second); len(got) != 3 {
		t.Errorf("%d mails after a resend, want 3", len(got))
	}
}
