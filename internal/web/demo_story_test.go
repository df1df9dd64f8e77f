package web_test

import (
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

var (
	lastChange = regexp.MustCompile(`<dt>Last change</dt>\s*<dd[^>]*>([^<]*)</dd>`)
	newestFlip = regexp.MustCompile(`(?s)<table data-testid="flips">.*?<tbody>\s*<tr>(.*?)</tr>`)
	flipCells  = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	tags       = regexp.MustCompile(`<[^>]+>`)
)

// What `make run` seeds tells one story: on each circuit's page the state,
// the last change and the newest flip of the flip log agree (a circuit
// that changed has a flip log, one that never did says so); a learned
// concurrency is shown only for a function whose trigger has one (not an
// Event Hubs consumer).
func TestTheDemoTellsOneStory(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	ctx, now := t.Context(), srv.Clock.Now()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", now); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedHistory(ctx, srv.App.Store, now); err != nil {
		t.Fatal(err)
	}
	ns := strings.ToLower(testenv.Prefix(t)) + ".servicebus.windows.net"
	hub := amqphubtest.Serve(t, amqphub.Fixed{"orders": {"0": {Last: 48300}, "1": {Last: 47930}, "2": {Last: 48600}, "3": {Last: 48300}}})
	if err := demo.SeedHostStorage(ctx, srv.App.Store, testenv.ConnectionString(t), now, demo.HostSeed{HubAddr: hub, Namespace: ns, Queues: true}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	circuits, err := srv.App.Store.Circuits.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(circuits) < 5 {
		t.Fatalf("%d circuits seeded, want the demo's five", len(circuits))
	}
	for _, c := range circuits {
		page := b.get("/circuits/" + c.AppID + "/" + c.Function)
		wantStatus(t, page, http.StatusOK)
		last := lastChange.FindStringSubmatch(page.body)
		if last == nil {
			t.Errorf("%s: no last change", c.Function)
			continue
		}
		said := html.UnescapeString(last[1])
		flip := newestFlip.FindStringSubmatch(page.body)
		switch {
		case c.Episode == 0:
			// Never changed: its last change is its creation.
			if flip != nil || !strings.Contains(page.body, "No transition yet.") || !strings.Contains(said, "· created ") {
				t.Errorf("%s never changed (episode 0), but its last change says %q, or its page shows a flip", c.Function, said)
			}
		case flip == nil:
			t.Errorf("%s says %q, at episode %d, but its flip log is empty", c.Function, said, c.Episode)
		default:
			var cells []string
			for _, m := range flipCells.FindAllStringSubmatch(flip[1], -1) {
				cells = append(cells, strings.TrimSpace(html.UnescapeString(tags.ReplaceAllString(m[1], ""))))
			}
			episode, change, why := cells[1], cells[2], cells[5]
			if episode != strconv.FormatInt(c.Episode, 10) || !strings.HasSuffix(change, "→ "+c.State.String()) || why != c.Reason ||
				!strings.Contains(said, "episode "+episode+" · "+why) {
				t.Errorf("%s is %s at episode %d; its last change says %q; its newest flip: episode %s, %s, %q", c.Function, c.State, c.Episode, said, episode, change, why)
			}
		}
		if strings.Contains(page.body, "Learned concurrency of") && c.EventHub != "" {
			t.Errorf("%s consumes an Event Hub, which has no dynamic concurrency, and its page shows a learned one", c.Function)
		}
	}
}
