package e2e_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestPoisonJourney (a short name: Chromium's socket path holds it) walks the demo's
// queue-triggered function on the real clock, in Chromium: a person sends a
// poison message from the demo host's page; the function fails on it five
// times and the host sets it aside in the poison queue; Fusebox shows it on
// the queue's page with its dequeue count and mails the circuit's
// recipients; the person fixes the parser, requeues it from the page with
// a reason, and the function processes it; the poison queue is empty.
func TestPoisonJourney(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartWith(t, smtp.Env(), apptest.Options{RealClock: true, SetAsideEvery: time.Second})
	ctx := t.Context()
	dir := t.TempDir()
	settings := dir + "/local.settings.json"
	if err := demo.Seed(ctx, srv.App.Store, settings, time.Now()); err != nil {
		t.Fatal(err)
	}
	conn := testenv.ConnectionString(t)
	if !strings.Contains(conn, "QueueEndpoint=") {
		t.Fatal("the test storage has no QueueEndpoint: start Azurite with scripts/azurite.sh")
	}
	tag := strings.ToLower(strings.ReplaceAll(testenv.Prefix(t), "_", ""))
	name := "orders-" + tag
	app, err := srv.App.Store.Apps.Get(ctx, demo.AppID)
	if err != nil {
		t.Fatal(err)
	}
	app.HostStorage, app.HostID = conn, "demo-"+tag
	if err := srv.App.Store.Apps.Put(ctx, app); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: demo.AppID, Function: "TakeOrders", Settings: circuit.Settings{Threshold: 20, Window: time.Minute, Queue: name, Recipients: []string{"oncall@example.com"}}, State: circuit.Closed, ChangedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	queue := func(n string) *azqueue.QueueClient {
		c, err := azqueue.NewQueueClientFromConnectionString(conn, n, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = c.Delete(context.Background(), nil) })
		return c
	}
	bc, err := azblob.NewClientFromConnectionString(conn, &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	processed := make(chan string, 16)
	host := &demo.Host{Settings: settings, Function: "ProcessOrders", Blob: bc, HostID: app.HostID, Namespace: tag + ".servicebus.windows.net",
		EventHub: name, Group: "$default", Epoch: time.Now(),
		Orders: &demo.OrderQueue{Queue: queue(name), Poison: queue(name + "-poison"), Function: "TakeOrders", Fixed: dir + "/parser-fixed",
			Retry: time.Second, Processed: func(body string) { processed <- body }}}
	if err := host.Start(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = host.Run(runCtx, 200*time.Millisecond) }()
	hostPage := httptest.NewServer(host)
	defer hostPage.Close()

	// The demo host's page in a browser of its own: it reloads itself every
	// 2 s, and its form's post may still be loading when Fusebox's sign-in
	// starts; in one tab, either aborted the other (CI saw ERR_ABORTED).
	hp, p := newPage(t), newPage(t)
	start := time.Now()
	hp.do(t, chromedp.Navigate(hostPage.URL), chromedp.WaitVisible(chromedp.CSS(`[data-testid="send-poison"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="send-poison"]`)))

	// Five tries a second apart, then the poison queue; Fusebox looks every second.
	p.signIn(t, srv.URL, "olivia")
	queuePage := srv.URL + "/apps/" + demo.AppID + "/queues/" + name + "-poison"
	showing := func(what, sel string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() (bool, string) { // reload: the page is not live
			p.do(t, chromedp.Navigate(queuePage), chromedp.WaitVisible(chromedp.CSS(`[data-testid="queue-count"]`)))
			n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`))
			if err != nil {
				t.Fatal(err)
			}
			return n > 0, fmt.Sprintf("the queue's page does not show %s: %s", what, p.text(t, "main"))
		})
	}
	showing("the poison message", `[data-testid="message"]`)
	t.Logf("shown on the queue's page %s after it was sent", time.Since(start).Round(time.Millisecond))
	if body, tries := p.text(t, `[data-testid="body"]`), p.text(t, `[data-testid="dequeue-count"]`); !strings.Contains(body, `"sku":"BROKEN"`) || tries != "0" {
		t.Fatalf("the page shows body %q with %s tries; want the BROKEN order, not yet tried from the poison queue", body, tries)
	}
	mail, ok := smtp.WaitFor(func(m mailtest.Message) bool {
		return strings.Contains(m.Subject, name+"-poison in "+demo.AppID+" holds work set aside") && m.To == "oncall@example.com"
	}, 20*time.Second)
	if !ok {
		t.Fatalf("no mail about the poison queue within 20 s; got %v", smtp.Messages())
	}
	if !strings.Contains(mail.Text, "(TakeOrders)") || !strings.Contains(mail.Text, "/apps/"+demo.AppID+"/queues/"+name+"-poison") || strings.Contains(mail.Text, "BROKEN") {
		t.Errorf("the mail should name the function and link the queue's page, and carry no body:\n%s", mail.Text)
	}
	t.Logf("mail received %s after it was sent", time.Since(start).Round(time.Millisecond))

	// Fixed, then sent back from the page. In a browser of its own: the
	// first tab has been reloading the host's page every 2 s since, and a
	// navigation there can race its reload (CI saw ERR_ABORTED); a fresh
	// tab clicks long before its first reload.
	fix := newPage(t)
	fix.do(t, chromedp.Navigate(hostPage.URL), chromedp.WaitVisible(chromedp.CSS(`[data-testid="fix"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="fix"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="parser"][data-fixed="true"]`)))
	if got := fix.text(t, `[data-testid="parser"]`); got != "fixed" {
		t.Fatalf("the demo page says the parser is %q", got)
	}
	p.do(t, chromedp.Navigate(queuePage), chromedp.WaitVisible(chromedp.CSS(`[data-testid="requeue"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="scope-all"]`)),
		chromedp.SendKeys(chromedp.CSS(`#reason`), "parser fixed for BROKEN skus"),
		chromedp.Click(chromedp.CSS(`[data-testid="requeue"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="confirm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="queue-run"]`)))
	select {
	case body := <-processed:
		if !strings.Contains(body, "BROKEN") {
			t.Fatalf("processed %q, want the requeued order", body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the requeued order was not processed within 20 s")
	}
	t.Logf("processed %s after it was sent", time.Since(start).Round(time.Millisecond))
	showing("the queue empty", `.empty`)
	// The run says it is done once it has looked again and found nothing
	// more to move: the queue may be empty a moment before.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		p.do(t, chromedp.Navigate(queuePage), chromedp.WaitVisible(chromedp.CSS(`[data-testid="queue-run"]`)))
		got := p.text(t, `[data-testid="queue-run"]`)
		return strings.Contains(got, ": 1 done"), fmt.Sprintf("the page says of the requeue: %q", got)
	})
	if errs := append(append(p.errors(), hp.errors()...), fix.errors()...); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}
