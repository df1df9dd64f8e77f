package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/internal/throttle"
)

// phoneWidth is a common phone's viewport (CSS pixels).
const phoneWidth = 390

// fitsThePhone says what on the page is wider than the viewport: "" when
// nothing scrolls the page sideways.
func fitsThePhone(t *testing.T, p *page) string {
	t.Helper()
	got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`(() => {
		const w = document.documentElement.clientWidth, s = document.documentElement.scrollWidth;
		if (s <= w) return "";
		const wide = [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > w + 1)
			.map(e => e.tagName.toLowerCase() + (e.dataset.testid ? "[" + e.dataset.testid + "]" : "") + (e.className ? "." + e.className : ""));
		return "scrollWidth " + s + " > " + w + ": " + wide.slice(0, 8).join(", ");
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// reachable says whether sel is on the page, within the viewport's width.
func reachable(t *testing.T, p *page, sel string) bool {
	t.Helper()
	ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`(() => {
		const e = document.querySelector('`+sel+`');
		if (!e) return false;
		const r = e.getBoundingClientRect();
		return r.width > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestPhoneFit (short: Chromium's socket path holds the name): on a
// phone, the three pages the person paged at night opens — the
// mailed resume page, the circuit page and the overview — fit the screen
// (no sideways scroll of the page; wide tables scroll in their own box),
// every navigation entry is on screen, and Resume is within reach.
func TestPhoneFit(t *testing.T) {
	t.Parallel()
	srv, p, _ := signedIn(t, "olivia")
	link := mailedResumeLink(t, srv)
	p.do(t, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	for _, c := range []struct{ name, path, ready, resume string }{
		{"the overview", "/", `[data-testid="apps-count"]`, ""},
		{"the circuit page", "/circuits/" + demo.AppID + "/SyncInventory", `[data-testid="state"]`, `[data-testid="resume"]`},
		{"the resume confirmation", "/circuits/" + demo.AppID + "/SyncInventory/resume", `[data-testid="confirm"]`, `[data-testid="confirm"]`},
		{"the mailed resume page", link, `[data-testid="resume"]`, `[data-testid="resume"]`},
	} {
		p.do(t, chromedp.Navigate(srv.URL+c.path), chromedp.WaitVisible(chromedp.CSS(c.ready)))
		if wide := fitsThePhone(t, p); wide != "" {
			t.Errorf("%s is wider than a %d px phone: %s", c.name, phoneWidth, wide)
		}
		if c.resume != "" && !reachable(t, p, c.resume) {
			t.Errorf("%s: %s is not within the phone's width", c.name, c.resume)
		}
		if !strings.HasPrefix(c.path, "/resume/") {
			for _, nav := range []string{"/", "/circuits", "/apps", "/notifications", "/channels", "/jobs", "/locks", "/audit"} {
				if !reachable(t, p, `header nav a[href="`+nav+`"]`) {
					t.Errorf("%s: the navigation entry %s is off the screen", c.name, nav)
				}
			}
			if !reachable(t, p, `header form[action="/logout"] button`) {
				t.Errorf("%s: Sign out is off the screen", c.name)
			}
		}
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}

// TestLocalTime: a viewer in Tokyo hovering over a time sees it in their
// own zone, with UTC beside it (the page writes UTC; a small script adds
// the viewer's time).
func TestLocalTime(t *testing.T) {
	t.Parallel()
	srv, p, _ := signedIn(t, "olivia")
	p.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return err
	}))
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/SyncInventory"), chromedp.WaitVisible(chromedp.CSS(`dd[data-local-time]`)))
	title, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector('dd[data-local-time]').title`))
	if err != nil {
		t.Fatal(err)
	}
	// The demo's SyncInventory changed 12 minutes before 09:00 UTC: 08:48 UTC is 17:48 in Tokyo.
	if !strings.Contains(title, "17:48") || !strings.Contains(title, "GMT+9") || !strings.Contains(title, "08:48:00 UTC") {
		t.Errorf("the last change's time reads %q on hover; want 17:48 GMT+9 beside 08:48:00 UTC", title)
	}
	// An instant written out, a job's next run on the overview, reads in
	// Tokyo's time too.
	p.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`time[data-local]`)))
	next, err := chromedp.Run(p.ctx, chromedp.Evaluate[struct{ Text, DateTime string }](`(() => { const e = document.querySelector('time[data-local]'); return {Text: e.textContent, DateTime: e.getAttribute('datetime')}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, next.DateTime)
	if err != nil {
		t.Fatal(err)
	}
	if want := at.In(time.FixedZone("JST", 9*3600)).Format("Mon 15:04") + " GMT+9"; next.Text != want {
		t.Errorf("a job's next run at %s reads %q; want %q", next.DateTime, next.Text, want)
	}
	// An instant inside a sentence built by the server: who acknowledged
	// the open circuit, and when, to the second.
	p.do(t, chromedp.Navigate(srv.URL+"/circuits/"+demo.AppID+"/SyncInventory"), chromedp.Click(chromedp.CSS(`[data-testid="acknowledge"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="acked"] time[data-local]`)))
	acked, err := chromedp.Run(p.ctx, chromedp.Evaluate[struct{ Text, DateTime, Line string }](`(() => { const e = document.querySelector('[data-testid="acked"] time'); return {Text: e.textContent, DateTime: e.getAttribute('datetime'), Line: e.parentElement.textContent}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	at, err = time.Parse(time.RFC3339, acked.DateTime)
	if err != nil {
		t.Fatal(err)
	}
	if want := at.In(time.FixedZone("JST", 9*3600)).Format("15:04:05") + " GMT+9"; acked.Text != want || !strings.Contains(acked.Line, "olivia at "+want+"; reminders stopped") {
		t.Errorf("the acknowledgement at %s reads %q; want olivia at %s", acked.DateTime, strings.Join(strings.Fields(acked.Line), " "), want)
	}
}

// mailedResumeLink gives the demo app host storage (so the pages show its
// checkpoints and queues) and returns the path of the resume link mailed
// for the open SyncInventory.
func mailedResumeLink(t *testing.T, srv *apptest.Server) string {
	t.Helper()
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, testenv.ConnectionString(t), srv.Clock.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	sync, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory")
	if err != nil {
		t.Fatal(err)
	}
	return "/resume/" + srv.App.Links.Sign(alerts.Link{Circuit: demo.AppID + "/SyncInventory", Episode: sync.Episode, Incarnation: sync.Incarnation,
		Action: "resume", Recipient: "oncall@example.com", Expires: srv.Clock.Now().Add(time.Hour)})
}

// TestTheResumePageFitsItsCardOnADesktop: on a 1280 px screen the mailed
// resume page's checkpoint table stays inside its card (it ran past the
// card's right edge).
func TestTheResumePageFitsItsCardOnADesktop(t *testing.T) {
	t.Parallel()
	srv, p, _ := signedIn(t, "olivia")
	link := mailedResumeLink(t, srv)
	p.do(t, chromedp.EmulateViewport(1280, 900, chromedp.EmulateScale(1)),
		chromedp.Navigate(srv.URL+link), chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkpoints"]`)))
	out, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`(() => {
		const table = document.querySelector('[data-testid="checkpoints"]'), card = table.closest('.confirm');
		if (!card) return "no card holds the table";
		const t = table.getBoundingClientRect(), c = card.getBoundingClientRect();
		return t.right <= c.right + 0.5 ? "" : "the table ends at " + t.right + " px, its card at " + c.right + " px";
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if out != "" {
		t.Error(out)
	}
}

// TestEveryPageKindFitsAPhone: at 390 px no page scrolls sideways — a
// throttled circuit (it names the long host settings it lowered) and one
// without a throttle stage, an episode's record, a set-aside queue, Discover and the
// guard form of a found app.
func TestEveryPageKindFitsAPhone(t *testing.T) {
	t.Parallel()
	conn := testenv.ConnectionString(t)
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": demo.Subscription}, apptest.Options{ARMTransport: demo.ARM(conn)})
	ctx, now := t.Context(), srv.Clock.Now()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", now); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedHistory(ctx, srv.App.Store, now); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedHostStorage(ctx, srv.App.Store, conn, now, demo.HostSeed{Queues: true}); err != nil {
		t.Fatal(err)
	}
	po, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	// Throttled now: the page names each lowered setting and what it was.
	batch := "64"
	po.Throttle = circuit.Throttle{Threshold: 40, OnlyThrottling: true}
	po.State, po.Episode, po.AppliedEpisode, po.ChangedAt, po.AppliedAt = circuit.Throttled, po.Episode+1, po.Episode+1, now, now
	po.Lowered, po.LoweredKind = map[string]*string{throttle.EventHubMaxBatch: &batch, throttle.EventHubPrefetch: nil}, throttle.EventHubs
	po.Released = throttle.EventHubMaxBatch                     // handed back: its name is on the page too
	if err := srv.App.Store.Circuits.Put(ctx, po); err != nil { // with its actuation: what is lowered
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	p.do(t, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	guard := ""
	for _, c := range []struct{ name, path, ready string }{
		{"a throttled circuit", "/circuits/" + demo.AppID + "/ProcessOrders", `[data-testid="throttle"]`},
		{"a circuit without one", "/circuits/" + demo.AppID + "/SyncInventory", `[data-testid="flips"]`},
		{"an episode's record", "/circuits/" + demo.AppID + "/SyncInventory/episodes/3", `main h1`},
		{"a resume's confirmation", "/circuits/" + demo.AppID + "/ProcessOrders/resume", `main h1`},
		{"a trip's confirmation", "/circuits/" + demo.AppID + "/SyncInventory/trip", `main h1`},
		{"a set-aside queue", "/apps/" + demo.AppID + "/queues/" + demo.ParkingQueue, `main h1`},
		{"Discover", "/apps/discover", `[data-testid="guard"]`},
		{"the guard form", "", `form[action="/apps/discover/guard"]`},
		{"Tokens", "/tokens", `form[action="/tokens"]`},
		{"Teams", "/teams", `main h1`},
		{"a team's form", "/teams/" + demo.TeamOrders + "/edit", `textarea#scopes`},
		{"Alerts", "/alerts", `main h1`},
		{"Downstreams", "/downstreams", `main h1`},
		{"a downstream", "/downstreams/" + demo.Store, `main h1`},
		{"Channels", "/channels", `main h1`},
		{"Notifications", "/notifications", `main h1`},
		{"Audit", "/audit", `main h1`},
		{"Locks", "/locks", `main h1`},
	} {
		path := c.path
		if path == "" {
			path = guard
		}
		p.do(t, chromedp.Navigate(srv.URL+path), chromedp.WaitVisible(chromedp.CSS(c.ready)))
		if c.name == "Discover" {
			href, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="guard"]').getAttribute('href')`))
			if err != nil {
				t.Fatal(err)
			}
			guard = href
		}
		if wide := fitsThePhone(t, p); wide != "" {
			t.Errorf("%s is wider than a %d px phone: %s", c.name, phoneWidth, wide)
		}
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}
