package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// The host learns a concurrency for a queue-triggered function (dynamic
// concurrency covers Blob, Queue and Service Bus triggers): the page that
// resumes it says what the host's snapshot holds and draws the samples of
// the last day, one bar each.
func TestTheHostPanelShowsLearnedConcurrencyOfAQueueFunction(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	ctx, now := t.Context(), srv.Clock.Now()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", now); err != nil {
		t.Fatal(err)
	}
	ns := strings.ToLower(testenv.Prefix(t)) + ".servicebus.windows.net"
	if err := demo.SeedHostStorage(ctx, srv.App.Store, testenv.ConnectionString(t), now, demo.HostSeed{Namespace: ns, Queues: true}); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{4, 8, 16} { // what the host sampler would have kept over the last hour
		if err := srv.App.Store.HostSamples.PutConcurrency(ctx, demo.AppID, "TakeOrders", now.Add(time.Duration(i-3)*20*time.Minute), n); err != nil {
			t.Fatal(err)
		}
	}
	c, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "TakeOrders")
	if err != nil {
		t.Fatal(err)
	}
	c.State, c.Episode, c.AppliedEpisode, c.ChangedAt, c.AppliedAt = circuit.ForcedOpen, 1, 1, now, now
	if err := srv.App.Store.Circuits.Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/circuits/" + demo.AppID + "/TakeOrders/resume")
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(page.body, "Learned concurrency of TakeOrders: 16 (4 cores;") {
		t.Errorf("the resume page does not say the learned concurrency:\n%s", testenv.GrepLines(page.body, "oncurrency"))
	}
	_, chart, _ := strings.Cut(page.body, `data-testid="concurrency-day"`)
	chart, _, _ = strings.Cut(chart, "</svg>")
	if bars := strings.Count(chart, "<rect"); bars != 3 {
		t.Errorf("the day's concurrency chart has %d bars, want the 3 samples stored", bars)
	}
}
