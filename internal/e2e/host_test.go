package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// ordersHub answers for the orders hub as Event Hubs would, with fixed
// heads: partition 3's first retained event is past its checkpoint.
var ordersHub = amqphub.Fixed{"orders": {
	"0": {First: 0, Last: 48311}, "1": {First: 0, Last: 47930}, "2": {First: 0, Last: 48752}, "3": {First: 48200, Last: 48299},
}}

// TestResumePageShowsCheckpoints walks the resume page as the recipient
// sees it, on the real clock: the demo app's storage holds its host's
// checkpoints of the orders hub; ProcessOrders trips; the mailed link's
// page says where it resumes, how many events wait (read from the hub
// through azeventhubs), which expired, and that nothing moved since the
// trip; a checkpoint then written while the trigger is off shows as a
// warning, and fewer events wait, on the overview too.
func TestResumePageShowsCheckpoints(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartWith(t, smtp.Env(), apptest.Options{RealClock: true, HostInsightTTL: time.Millisecond})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	conn := testenv.ConnectionString(t)
	// Checkpoints of a namespace of its own: other tests seed the demo's.
	ns := strings.ToLower(strings.ReplaceAll(testenv.Prefix(t), "_", "")) + ".servicebus.windows.net"
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, conn, time.Now(), demo.HostSeed{HubAddr: amqphubtest.Serve(t, ordersHub), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	reportOverThreshold(t, srv.URL)
	m, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, "ProcessOrders is open") && resumeLink(m.Text) != ""
	}, 20*time.Second)
	if !ok {
		t.Fatal("no mail about ProcessOrders")
	}
	switched := srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() }).SwitchedAt()

	p := newPage(t)
	p.do(t, chromedp.Navigate(resumeLink(m.Text)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkpoints"]`)))
	summary := p.text(t, `[data-testid="resume-summary"]`)
	if !strings.Contains(summary, "Resumes from sequence 48211 on partition 0, 47930 on partition 1, 48502 on partition 2, 48117 on partition 3") ||
		!strings.Contains(summary, "unmoved since the trip") {
		t.Errorf("the resume page says %q", summary)
	}
	if table := p.text(t, `[data-testid="checkpoints"]`); !strings.Contains(table, "demo-instance-1") {
		t.Errorf("the checkpoints lack their owners: %q", table)
	}
	// 48311−48211, 47930−47930, 48752−48502, and 48299−48199 on partition
	// 3, where 48118…48199 expired.
	if !strings.Contains(summary, "About 450 events waiting.") {
		t.Errorf("the resume page does not say 450 events wait: %q", summary)
	}
	if w := waitingCells(t, p); w != "100 0 250 100" {
		t.Errorf("waiting per partition = %q, want 100 0 250 100", w)
	}
	if e := p.text(t, `[data-testid="events-expired"]`); !strings.Contains(e, "82 on orders/3") {
		t.Errorf("the expired events: %q", e)
	}
	// Dynamic concurrency does not cover Event Hubs triggers: the host
	// learns none for ProcessOrders, and the page claims none
	// (TestTheHostPanelShowsLearnedConcurrencyOfAQueueFunction has one).
	learned, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="concurrency"], [data-testid="concurrency-day"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if learned != 0 {
		t.Errorf("the resume page of an Event Hubs function shows a learned concurrency")
	}

	// Something consumes partition 2 while the trigger is off. A blob's
	// Last-Modified counts whole seconds, so a write in the second of the
	// switch cannot be told from one just before it and the page counts
	// only later seconds: the write is made again, once, after that second
	// if the store dated it within it.
	bc, err := azblob.NewClientFromConnectionString(conn, &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	seq, off := "48600", "1"
	consume := func() time.Time {
		resp, err := bc.UploadBuffer(t.Context(), hostinsight.EventHubContainer, ns+"/orders/$default/checkpoint/2", nil,
			&azblob.UploadBufferOptions{Metadata: map[string]*string{"sequencenumber": &seq, "offset": &off}})
		if err != nil || resp.LastModified == nil {
			t.Fatal("upload of the moved checkpoint:", err)
		}
		return *resp.LastModified
	}
	if second := switched.Truncate(time.Second); !consume().After(second) {
		<-time.After(time.Until(second.Add(time.Second))) // a wait for a known instant, not for another party
		if at := consume(); !at.After(second) {
			t.Fatalf("the store dated the checkpoint %s, not after the switch's second %s", at, second)
		}
	}
	// The operator reloads until the page shows the move: one reload may
	// come within the host snapshot's few seconds of keeping (a CI run
	// waited 60 s on a page that had loaded the kept snapshot).
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		p.do(t, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkpoints"]`)))
		shown, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="checkpoint-moved"]') !== null`))
		return err == nil && shown, "the resume page does not say a checkpoint moved while the trigger was off"
	})
	if w := p.text(t, `[data-testid="checkpoint-moved"]`); !strings.Contains(w, "orders/2") {
		t.Errorf("warning: %q", w)
	}
	if w := waitingCells(t, p); w != "100 0 152 100" {
		t.Errorf("after partition 2 moved to 48600, waiting = %q, want 100 0 152 100", w)
	}
	// The overview lists the open circuit with the same count, filled in
	// after the page has loaded.
	p.signIn(t, srv.URL, "victor")
	p.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-circuit="`+demo.AppID+`/ProcessOrders"] [data-testid="waiting-cell"] [data-testid="waiting-count"]`)))
	if n := p.text(t, `[data-circuit="`+demo.AppID+`/ProcessOrders"] [data-testid="waiting-cell"] [data-testid="waiting-count"]`); n != "352" {
		t.Errorf("the overview says %q events wait behind ProcessOrders, want 352", n)
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}

// waitingCells is the Waiting column of the checkpoints table, in order.
func waitingCells(t *testing.T, p *page) string {
	t.Helper()
	cells, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="checkpoints"] [data-testid="waiting"]')].map(c => c.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(cells, " ")
}
