package web_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/internal/throttle"
)

var applyLink = regexp.MustCompile(`https?://[^\s"]+(/throttle/[A-Za-z0-9._~-]+)`)

// A throttle stage that asks first: its rule fires, nothing is lowered,
// the recipient gets a mail with an Apply link; the link's page shows what
// it would write and changes nothing until its button is pressed; then
// the settings are lowered, and the link acts no more.
//
// On the real clock: what the person waits for is the evaluator noticing,
// the mail, and the switch writing after they press the button.
func TestAThrottleAskedIsAppliedFromTheMailedLink(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartWith(t, smtp.Env(), apptest.Options{RealClock: true})
	settings := filepath.Join(t.TempDir(), "local.settings.json")
	if err := demo.Seed(t.Context(), srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	fifty := "50"
	if err := localsettings.Tune(settings, nil, map[string]*string{throttle.EventHubMaxBatch: &fifty}); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.EventHub, ci.Throttle = "orders", circuit.Throttle{Threshold: 40, Ask: true}
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), ci); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 45, "error": "429 Too Many Requests"}]}`), http.StatusAccepted)
	mail, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return m.To == "oncall@example.com" && strings.Contains(m.Subject, "ProcessOrders: lower its concurrency?")
	}, 20*time.Second)
	if !ok {
		t.Fatalf("no mail asking to throttle; got %v", smtp.Messages())
	}
	found := applyLink.FindStringSubmatch(mail.Text)
	if found == nil {
		t.Fatalf("the mail has no Apply link:\n%s", mail.Text)
	}
	link := found[1]
	batch := func() string {
		s, err := localsettings.Settings(settings)
		if err != nil {
			t.Fatal(err)
		}
		return s[throttle.EventHubMaxBatch]
	}
	if got := batch(); got != "50" {
		t.Fatalf("asked, yet the batch size is %q", got)
	}

	b := newBrowser(t, srv.URL)
	page := b.get(link)
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(page.body, throttle.EventHubMaxBatch+": 50 → 12") || !strings.Contains(page.body, "Apply the throttle") {
		t.Errorf("the link's page does not show what it writes:\n%s", section(page.body, "<main"))
	}
	if got := batch(); got != "50" {
		t.Fatalf("opening the link changed the batch size to %q", got)
	}
	// A resume link's token does not apply a throttle, nor the reverse.
	resume := srv.App.Links.Sign(alerts.Link{Circuit: demo.AppID + "/ProcessOrders", Episode: 1, Action: alerts.ActionResume, Recipient: "oncall@example.com", Expires: time.Now().Add(time.Hour)})
	wantStatus(t, b.get("/throttle/"+resume), http.StatusBadRequest)
	wantStatus(t, b.get("/resume/"+strings.TrimPrefix(link, "/throttle/")), http.StatusBadRequest)

	wantStatus(t, b.post(link, url.Values{}), http.StatusForbidden) // no CSRF token
	done := b.post(link, url.Values{"_csrf": {b.csrf(link)}})
	wantStatus(t, done, http.StatusOK)
	if !strings.Contains(done.body, "is being throttled") {
		t.Errorf("after the POST: %s", section(done.body, "<main"))
	}
	// The switch's write is the event waited on (testenv.WaitForFile).
	testenv.WaitForFile(t, settings, `"`+throttle.EventHubMaxBatch+`": "12"`, 20*time.Second)
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil || c.State != circuit.Throttled {
		t.Fatalf("after applying: %s, %v", c.State, err)
	}
	if flips, _ := srv.App.Store.Circuits.Flips(t.Context(), demo.AppID, "ProcessOrders", 1); len(flips) == 0 || flips[0].Actor != "apply link: oncall@example.com" {
		t.Errorf("the flip log does not say who applied it: %+v", flips)
	}
	wantStatus(t, b.post(link, url.Values{"_csrf": {b.csrf("/login")}}), http.StatusGone)
}

// A throttle on throttling errors only counts the failures whose error
// said the downstream pushed back, as reported: 45 null references throttle
// nothing; 45 TooManyRequests do.
func TestOnlyThrottlingErrorsCountTowardTheThrottle(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	settings := filepath.Join(t.TempDir(), "local.settings.json")
	if err := demo.Seed(t.Context(), srv.App.Store, settings, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.EventHub, ci.Throttle = "orders", circuit.Throttle{Threshold: 40, OnlyThrottling: true}
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), ci); err != nil {
		t.Fatal(err)
	}
	report := func(text string) {
		t.Helper()
		at := srv.Clock.Now().Add(-time.Second).UTC().Format(time.RFC3339)
		wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "at": "`+at+`", "count": 45, "error": "`+text+`"}]}`), http.StatusAccepted)
		srv.NextTick(t)
	}
	state := func() circuit.State {
		t.Helper()
		c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c.State
	}
	report("NullReferenceException: Object reference not set to an instance of an object")
	if st := state(); st != circuit.Closed {
		t.Fatalf("45 null references: %s; want closed (they are not a downstream pushing back)", st)
	}
	report("Response status code does not indicate success: TooManyRequests (429)")
	if st := state(); st != circuit.Throttled {
		t.Fatalf("45 TooManyRequests: %s; want throttled", st)
	}
}

// A circuit may add its own words for its downstream pushing back: with
// "quota exceeded" among them, 45 "Quota exceeded" failures throttle it,
// where the built-in words alone count none of them. Words only count on a
// throttle of throttling errors only, and the form says so.
func TestACircuitsOwnWordsForPushingBackCount(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	settings := filepath.Join(t.TempDir(), "local.settings.json")
	if err := demo.Seed(t.Context(), srv.App.Store, settings, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	edit := "/circuits/" + demo.AppID + "/ProcessOrders/edit"
	form := func(only bool) url.Values {
		v := url.Values{"_csrf": {b.csrf(edit)}, "threshold": {"100"}, "window": {"1m"}, "event_hub": {"orders"},
			"throttle_threshold": {"40"}, "throttle_words": {"quota exceeded, Partition is full"}}
		if only {
			v.Set("throttle_only", "on")
		}
		return v
	}
	refused := b.post(edit, form(false))
	wantStatus(t, refused, http.StatusUnprocessableEntity)
	if !strings.Contains(refused.body, "counted only when the throttle counts only failures that say the downstream pushed back") {
		t.Errorf("words without throttling errors only are refused without saying why:\n%s", section(refused.body, "throttle_words"))
	}
	wantStatus(t, b.post(edit, form(true)), http.StatusSeeOther)
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ci.Throttle.Words, "|"); got != "quota exceeded|Partition is full" || !ci.Throttle.OnlyThrottling {
		t.Fatalf("saved words %q, only %v", got, ci.Throttle.OnlyThrottling)
	}
	at := srv.Clock.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "at": "`+at+`", "count": 45, "error": "Quota-Exceeded for tenant 7"}]}`), http.StatusAccepted)
	srv.NextTick(t)
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders"); c.State != circuit.Throttled {
		t.Fatalf("45 quota-exceeded failures: %s; want throttled", c.State)
	}
	api := b.get("/api/v1/circuits/" + demo.AppID + "/ProcessOrders")
	if !strings.Contains(api.body, `"words":["quota exceeded","Partition is full"]`) {
		t.Errorf("the API does not give the throttle's words: %s", api.body)
	}
}
