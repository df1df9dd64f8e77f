package web_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// queueStem is a queue name no other test uses.
func queueStem() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "q" + hex.EncodeToString(b)
}

// makeQueue creates queue in the test storage with bodies on it, and
// deletes it when the test ends: every app of every test reads the same
// account.
func makeQueue(t *testing.T, conn, queue string, bodies ...string) *azqueue.QueueClient {
	t.Helper()
	qc, err := azqueue.NewQueueClientFromConnectionString(conn, queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qc.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = qc.Delete(context.Background(), nil) })
	for _, b := range bodies {
		if _, err := qc.EnqueueMessage(t.Context(), b, nil); err != nil {
			t.Fatal(err)
		}
	}
	return qc
}

// queueConn is the test storage's connection string, which must name
// Azurite's queue service.
func queueConn(t *testing.T) string {
	t.Helper()
	conn := testenv.ConnectionString(t)
	if !strings.Contains(conn, "QueueEndpoint=") {
		t.Fatal("the test storage has no QueueEndpoint: start Azurite with scripts/azurite.sh")
	}
	return conn
}

// waitFor nudges the fake clock until page shows want, for at most 20 s:
// the watcher looks at the queues on its own schedule.
func waitFor(t *testing.T, srv *apptest.Server, b *browser, page, want string) response {
	t.Helper()
	stop := srv.RunFakeClock()
	defer stop()
	var r response
	testenv.Eventually(t, 20*time.Second, func() (bool, string) { // the watcher announces nothing
		r = b.get(page)
		return strings.Contains(r.body, want), fmt.Sprintf("%s does not show %q:\n%s", page, want, r.body)
	})
	return r
}

// A queue-triggered function's poison messages are seen where a person
// looks: on its circuit page and the queue's own page, bodies as harmless
// text (markup escaped, a long body cut, its whole text for operators
// only), told to the circuit's recipients once, and sent back to work in
// the background after a confirmation, with a reason in the audit log.
func TestPoisonMessagesAreShownToldAndSentBackFromThePages(t *testing.T) {
	t.Parallel()
	srv := apptest.StartWith(t, nil, apptest.Options{SetAsideEvery: time.Second})
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	conn := queueConn(t)
	if err := demo.SeedHostStorage(ctx, srv.App.Store, conn, srv.Clock.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	source := queueStem()
	if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: demo.AppID, Function: "TakeOrders", Settings: circuit.Settings{Threshold: 10, Window: time.Minute, Queue: source, Recipients: []string{"queues@example.com"}}, State: circuit.Closed, ChangedAt: srv.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 400) + "END-OF-LONG-BODY"
	makeQueue(t, conn, source)
	makeQueue(t, conn, source+"-poison",
		`<script>alert("owned")</script>`,
		base64.StdEncoding.EncodeToString([]byte(`{"order": 7, "note": "<b>bold</b>"}`)), // as the Functions extension encodes
		long)

	op, viewer := newBrowser(t, srv.URL), newBrowser(t, srv.URL)
	op.signIn("olivia")
	viewer.signIn("victor")
	circuitPage := "/circuits/" + demo.AppID + "/TakeOrders"
	page := waitFor(t, srv, viewer, circuitPage, source+"-poison")
	if !strings.Contains(page.body, `data-testid="setaside-count">3<`) {
		t.Fatalf("the circuit page does not say 3 messages are set aside:\n%s", page.body)
	}
	if !strings.Contains(page.body, `data-testid="setaside-expires">expires in `) {
		t.Errorf("the circuit page does not say when the oldest set-aside message expires (Storage queues keep it 7 days)")
	}

	queuePage := "/apps/" + demo.AppID + "/queues/" + source + "-poison"
	seen := viewer.get(queuePage)
	wantStatus(t, seen, http.StatusOK)
	switch {
	case strings.Contains(seen.body, `<script>alert`) || strings.Contains(seen.body, `<b>bold</b>`):
		t.Fatal("a message body reached the page as markup")
	case !strings.Contains(seen.body, `&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;`):
		t.Fatalf("the script body is not shown as text:\n%s", seen.body)
	case !strings.Contains(seen.body, `&#34;note&#34;: &#34;&lt;b&gt;bold&lt;/b&gt;&#34;`):
		t.Fatal("the base64 body is not shown decoded")
	case strings.Contains(seen.body, "END-OF-LONG-BODY") || strings.Contains(seen.body, "full-body"):
		t.Fatal("a viewer sees the whole of a long body")
	case strings.Contains(seen.body, `name="id"`) || strings.Contains(seen.body, `data-testid="requeue"`):
		t.Fatal("a viewer is offered the send-back form")
	}
	if n := strings.Count(seen.body, `data-testid="dequeue-count">0<`); n != 3 {
		t.Errorf("%d messages show their dequeue count 0, want 3", n)
	}
	full := op.get(queuePage)
	if !strings.Contains(full.body, `data-testid="full-body"`) || !strings.Contains(full.body, "END-OF-LONG-BODY") {
		t.Fatal("an operator cannot open the whole long body")
	}

	// Told once, to the circuit's recipients, for this episode.
	msgs, err := srv.App.Store.Outbox.Recent(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	told := 0
	for _, m := range msgs {
		if m.Circuit == alerts.SetAsideSubject(demo.AppID, source+"-poison") {
			told++
			if m.Kind != alerts.KindSetAsideAppeared || m.To != "queues@example.com" || m.Episode != 1 {
				t.Errorf("notice %+v: want one appeared notice of episode 1 to queues@example.com", m)
			}
		}
	}
	if told != 1 {
		t.Errorf("%d notices about the poison queue, want 1", told)
	}

	ids := regexp.MustCompile(`name="id" value="([^"]+)"`).FindAllStringSubmatch(full.body, -1)
	if len(ids) != 3 {
		t.Fatalf("%d pickable messages, want 3", len(ids))
	}
	form := url.Values{"_csrf": {op.csrf(queuePage)}, "action": {"requeue"}, "scope": {"picked"}, "to": {source},
		"id": {ids[0][1], ids[1][1]}, "reason": {"parser fixed in 2.1"}}
	wantStatus(t, viewer.post(queuePage+"/act", url.Values{"_csrf": {viewer.csrf(queuePage)}, "action": {"requeue"}, "scope": {"all"}, "reason": {"x"}}), http.StatusForbidden)
	asked := op.post(queuePage+"/act", form)
	wantStatus(t, asked, http.StatusOK)
	if !strings.Contains(asked.body, "Requeue 2 messages from "+source+"-poison to "+source+"?") {
		t.Fatalf("no confirmation before the requeue:\n%s", asked.body)
	}
	form.Set("confirmed", "yes")
	wantStatus(t, op.post(queuePage+"/act", form), http.StatusSeeOther)
	waitFor(t, srv, op, queuePage, "Requeue to "+source+": 2 done")

	work, err := azqueue.NewQueueClientFromConnectionString(conn, source, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	n := int32(32)
	peek, err := work.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: &n})
	if err != nil || len(peek.Messages) != 2 {
		t.Fatalf("the work queue holds %d messages (%v), want the 2 picked", len(peek.Messages), err)
	}
	entries, err := srv.App.Store.Audit.Recent(ctx, srv.Clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	audited := false
	for _, e := range entries {
		audited = audited || (e.Action == "requeued" && e.Actor == "olivia" && strings.Contains(e.Detail, "2 moved") && strings.Contains(e.Detail, "parser fixed in 2.1"))
	}
	if !audited {
		t.Errorf("no audit line for the requeue: %+v", entries)
	}
}

// An app whose queue storage never answers holds up no other app's: the
// good app's poison queue is on its page before the hanging app's read
// has even timed out, and the hanging app's page then says why it shows
// nothing, in Fusebox's words.
func TestAnAppWhoseQueuesHangHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	srv := apptest.StartWith(t, nil, apptest.Options{SetAsideEvery: time.Second})
	ctx := t.Context()
	conn := queueConn(t)
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered, until the test ends
		}
	}()
	hanging := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;QueueEndpoint=http://" + hang.Addr().String() + "/devstoreaccount1;"
	for _, a := range []circuit.App{
		{ID: "hangs", Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/a.json", HostStorage: hanging},
		{ID: "works", Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/b.json", HostStorage: conn},
	} {
		if err := srv.App.Store.Apps.Put(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	source := queueStem()
	makeQueue(t, conn, source+"-poison", "order 1")
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	start := time.Now()
	waitFor(t, srv, b, "/apps/works/queues", source+"-poison")
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("the working app's queue showed after %s: the hanging app held it up past its 5 s time-out", took)
	}
	page := waitFor(t, srv, b, "/apps/hangs/queues", `data-testid="setaside-problem"`)
	if !strings.Contains(page.body, "timed out") {
		t.Errorf("the hanging app's page does not say its storage timed out:\n%s", page.body)
	}
}

// A poison message that expires within a day is told before the queue
// drops it: the queue's page warns, and its recipients get one notice.
// On the real clock: the service stamps the message's expiry with its own.
func TestAPoisonMessageAboutToExpireIsTold(t *testing.T) {
	t.Parallel()
	srv := apptest.StartWith(t, nil, apptest.Options{RealClock: true, SetAsideEvery: time.Second})
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	conn := queueConn(t)
	if err := demo.SeedHostStorage(ctx, srv.App.Store, conn, time.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	source := queueStem()
	if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: demo.AppID, Function: "TakeOrders", Settings: circuit.Settings{Threshold: 10, Window: time.Minute, Queue: source, Recipients: []string{"queues@example.com"}}, State: circuit.Closed, ChangedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	makeQueue(t, conn, source)
	poison := makeQueue(t, conn, source+"-poison")
	ttl := int32(2 * 3600)
	if _, err := poison.EnqueueMessage(ctx, "order 7", &azqueue.EnqueueMessageOptions{TimeToLive: &ttl}); err != nil {
		t.Fatal(err)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	testenv.Eventually(t, 20*time.Second, func() (bool, string) { // the watcher announces nothing
		page := viewer.get("/apps/" + demo.AppID + "/queues/" + source + "-poison").body
		return strings.Contains(page, `data-testid="setaside-expires">expires in 2 h`), "the queue's page does not say its message expires in 2 h:\n" + page
	})
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		msgs, err := srv.App.Store.Outbox.Recent(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, m := range msgs {
			if m.Circuit == alerts.SetAsideSubject(demo.AppID, source+"-poison") && m.To == "queues@example.com" {
				kinds[m.Kind]++
			}
		}
		return kinds[alerts.KindSetAsideExpiring] == 1 && kinds[alerts.KindSetAsideAppeared] == 1,
			fmt.Sprintf("notices about the poison queue: %v; want one appeared and one expiring", kinds)
	})
}
