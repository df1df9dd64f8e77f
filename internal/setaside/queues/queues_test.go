package queues_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/testenv"
)

var dev = egress.Endpoints{Development: true}

// conn is the test Azurite's connection string, which must name its queue
// service (scripts/azurite.sh and `make test` start one).
func conn(t *testing.T) string {
	t.Helper()
	c := testenv.ConnectionString(t)
	if !strings.Contains(c, "QueueEndpoint=") {
		t.Fatal("the test storage has no QueueEndpoint: start Azurite with scripts/azurite.sh (it runs the queue service too)")
	}
	return c
}

// stem is a queue name no other test uses.
func stem(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "q" + hex.EncodeToString(b)
}

// put creates the queue, puts the bodies on it, and deletes it when the
// test ends: every test's apps read the same account.
func put(t *testing.T, c string, queue string, bodies ...string) {
	t.Helper()
	qc, err := azqueue.NewQueueClientFromConnectionString(c, queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qc.Create(t.Context(), nil); err != nil && !strings.Contains(err.Error(), "QueueAlreadyExists") {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = qc.Delete(context.Background(), nil) })
	for _, b := range bodies {
		if _, err := qc.EnqueueMessage(t.Context(), b, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func open(t *testing.T, c string, transport policy.Transporter) *queues.Account {
	t.Helper()
	a, err := queues.Open(c, nil, transport, dev)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSetAsideQueuesAreFoundWithCountAndAge(t *testing.T) {
	c := conn(t)
	s := stem(t)
	put(t, c, s, "work")
	put(t, c, s+"-poison", "bad 1", "bad 2", "bad 3")
	put(t, c, s+"-parked", "parked")
	put(t, c, s+"-empty-poison")
	before := time.Now().Add(-time.Minute)
	found, err := open(t, c, nil).List(t.Context(), setaside.Owners{Parking: map[string]string{s + "-parked": "ProcessOrders"}, Triggers: map[string]string{s: "TakeOrders"}})
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]queues.Found{}
	for _, f := range found {
		if strings.HasPrefix(f.Name, s) {
			mine[f.Name] = f
		}
	}
	want := map[string]struct {
		kind          setaside.Kind
		source, fn    string
		count         int
		hasOldestTime bool
	}{
		s + "-poison":       {setaside.Poison, s, "TakeOrders", 3, true},
		s + "-parked":       {setaside.Parking, "", "ProcessOrders", 1, true},
		s + "-empty-poison": {setaside.Poison, s + "-empty", "", 0, false},
	}
	if len(mine) != len(want) {
		t.Fatalf("found %v, want %d queues (not the work queue itself)", mine, len(want))
	}
	for name, w := range want {
		f := mine[name]
		if f.Kind != w.kind || f.Source != w.source || f.Function != w.fn || f.Count != w.count || f.Oldest.IsZero() == w.hasOldestTime {
			t.Errorf("%s: %+v, want %+v", name, f, w)
		}
		if w.hasOldestTime && f.Oldest.Before(before) {
			t.Errorf("%s: oldest %s, before the test began", name, f.Oldest)
		}
	}
}

func TestAPeekShowsBodiesAsTextAndActsOnNothing(t *testing.T) {
	c := conn(t)
	q := stem(t) + "-poison"
	put(t, c, q, base64.StdEncoding.EncodeToString([]byte(`{"order": 42}`)), "<b>bold</b>\x1b[2J", "ok\xffend", strings.Repeat("x", 1000))
	a := open(t, c, nil)
	msgs, err := a.Peek(t.Context(), q, 32, 300)
	if err != nil {
		t.Fatal(err)
	}
	want := []setaside.Body{
		{Text: `{"order": 42}`, Decoded: true},
		{Text: "<b>bold</b>\uFFFD[2J"},
		{Text: "ok\uFFFDend"},
		{Text: strings.Repeat("x", 300), Cut: true},
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages peeked, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		if m.Body != want[i] || m.DequeueCount != 0 || m.Inserted.IsZero() || m.ID == "" {
			t.Errorf("message %d: %+v, want body %+v, never dequeued", i, m, want[i])
		}
	}
	again, err := a.Peek(t.Context(), q, 32, 300)
	if err != nil || len(again) != len(want) {
		t.Errorf("a second peek found %d (%v): peeking must take nothing", len(again), err)
	}
}

func TestARequeueMovesEveryMessageOnce(t *testing.T) {
	c := conn(t)
	s := stem(t)
	var bodies []string
	for i := range 50 {
		bodies = append(bodies, fmt.Sprintf("order %d", i))
	}
	put(t, c, s)
	put(t, c, s+"-poison", bodies...)
	a := open(t, c, nil)
	moved, err := a.Move(t.Context(), queues.Move{From: s + "-poison", To: s, N: 1000, Hold: 30 * time.Second}, nil)
	if err != nil || moved.Moved != 50 || moved.Doubled != 0 {
		t.Fatalf("requeue: %+v, %v; want 50 moved", moved, err)
	}
	left, _ := a.Peek(t.Context(), s+"-poison", 32, 0)
	got := map[string]int{}
	for range 2 {
		batch, err := azqueueDrain(t, c, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batch {
			got[b]++
		}
	}
	if len(left) != 0 || len(got) != 50 {
		t.Fatalf("%d left in the poison queue, %d distinct in the work queue; want 0 and 50", len(left), len(got))
	}
	for _, b := range bodies {
		if got[b] != 1 {
			t.Errorf("%q arrived %d times", b, got[b])
		}
	}
}

// Picked messages go, the others stay where they were, visible at once:
// a person chose three of five on the page.
func TestOnlyThePickedMessagesAreRequeuedOrDeleted(t *testing.T) {
	c := conn(t)
	s := stem(t)
	put(t, c, s)
	put(t, c, s+"-poison", "a", "b", "c", "d", "e")
	a := open(t, c, nil)
	head, err := a.Peek(t.Context(), s+"-poison", 5, 0)
	if err != nil || len(head) != 5 {
		t.Fatalf("peek: %d, %v", len(head), err)
	}
	var batches []queues.Moved
	moved, err := a.Move(t.Context(), queues.Move{From: s + "-poison", To: s, IDs: []string{head[0].ID, head[2].ID}, Hold: time.Minute},
		func(m queues.Moved) { batches = append(batches, m) })
	if err != nil || moved.Moved != 2 || len(batches) != 1 {
		t.Fatalf("requeue of 2 picked: %+v, %v, progress %v", moved, err, batches)
	}
	if moved, err := a.Move(t.Context(), queues.Move{From: s + "-poison", IDs: []string{head[4].ID}, Hold: time.Minute}, nil); err != nil || moved.Moved != 1 {
		t.Fatalf("delete of 1 picked: %+v, %v", moved, err)
	}
	left, err := a.Peek(t.Context(), s+"-poison", 32, 0)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range left {
		bodies = append(bodies, m.Body.Text)
	}
	work, _ := a.Peek(t.Context(), s, 32, 0)
	var requeued []string
	for _, m := range work {
		requeued = append(requeued, m.Body.Text)
	}
	if strings.Join(bodies, ",") != "b,d" || strings.Join(requeued, ",") != "a,c" {
		t.Fatalf("poison queue holds %v (visible now), work queue %v; want [b d] and [a c], e deleted", bodies, requeued)
	}
}

// azqueueDrain takes up to 32 messages from queue for good.
func azqueueDrain(t *testing.T, c, queue string) ([]string, error) {
	qc, err := azqueue.NewQueueClientFromConnectionString(c, queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		return nil, err
	}
	n := int32(32)
	resp, err := qc.DequeueMessages(t.Context(), &azqueue.DequeueMessagesOptions{NumberOfMessages: &n})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range resp.Messages {
		out = append(out, *m.MessageText)
		if _, err := qc.DeleteMessage(t.Context(), *m.MessageID, *m.PopReceipt, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dyingAfterPut is a process that dies between the put and the delete:
// every DELETE fails as if the connection went down.
type dyingAfterPut struct{}

func (dyingAfterPut) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete {
		return nil, errors.New("connection reset (the process died)")
	}
	return http.DefaultClient.Do(req)
}

// A requeue cut between the put and the delete leaves the message in both
// queues, never in neither: it comes back to the poison queue by itself
// once its hold ends.
func TestARequeueCutAfterThePutLosesNothing(t *testing.T) {
	c := conn(t)
	s := stem(t)
	put(t, c, s)
	put(t, c, s+"-poison", "order 1")
	moved, err := open(t, c, dyingAfterPut{}).Move(t.Context(), queues.Move{From: s + "-poison", To: s, N: 10, Hold: time.Second}, nil)
	if err == nil || moved.Doubled != 1 || moved.Moved != 0 {
		t.Fatalf("requeue: %+v, %v; want one message put and not deleted", moved, err)
	}
	a := open(t, c, nil)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		back, err := a.Peek(t.Context(), s+"-poison", 1, 0)
		return err == nil && len(back) == 1 && back[0].Body.Text == "order 1", "the message did not come back to the poison queue after a 1 s hold"
	})
	work, err := a.Peek(t.Context(), s, 32, 0)
	if err != nil || len(work) != 1 || work[0].Body.Text != "order 1" {
		t.Fatalf("the work queue holds %+v (%v), want the copy", work, err)
	}
}

func TestAnEndpointOutsideTheCloudIsNeverCalled(t *testing.T) {
	for _, setting := range []string{
		"DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + base64.StdEncoding.EncodeToString([]byte("k")) + ";QueueEndpoint=https://evil.example.com/",
		"https://169.254.169.254/",
		"http://orders.queue.core.windows.net/",
	} {
		if _, err := queues.Open(setting, &azfake.TokenCredential{}, nil, egress.Endpoints{}); !errors.Is(err, egress.ErrEndpoint) {
			t.Errorf("Open(%q) = %v, want the endpoint refused", setting, err)
		}
	}
}

// The oldest message's expiry is read with its age: the service's default
// time-to-live is 7 days; a message that never expires (-1) has none.
func TestTheOldestMessagesExpiryIsRead(t *testing.T) {
	c := conn(t)
	s := stem(t)
	put(t, c, s+"-poison")
	put(t, c, s+"-parked")
	enqueue := func(queue string, ttl int32) {
		qc, err := azqueue.NewQueueClientFromConnectionString(c, queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := qc.EnqueueMessage(t.Context(), "set aside", &azqueue.EnqueueMessageOptions{TimeToLive: &ttl}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(s+"-poison", 2*3600)
	enqueue(s+"-parked", -1)
	start := time.Now()
	found, err := open(t, c, nil).List(t.Context(), setaside.Owners{Parking: map[string]string{s + "-parked": "ProcessOrders"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		switch f.Name {
		case s + "-poison":
			if d := f.Expires.Sub(start); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
				t.Errorf("the poison message expires %s after the look; want 2 h", d)
			}
		case s + "-parked":
			if !f.Expires.IsZero() {
				t.Errorf("a message that never expires reads as expiring at %s", f.Expires)
			}
		}
	}
}

// deletingFirst deletes queue just before its properties are read: the
// queue was listed, then someone deleted it.
type deletingFirst struct {
	t     *testing.T
	c     string
	queue string
}

func (d deletingFirst) Do(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/"+d.queue) && req.URL.Query().Get("comp") == "metadata" {
		qc, err := azqueue.NewQueueClientFromConnectionString(d.c, d.queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
		if err != nil {
			d.t.Error(err)
		} else if _, err := qc.Delete(req.Context(), nil); err != nil {
			d.t.Error(err)
		}
	}
	return http.DefaultClient.Do(req)
}

// A set-aside queue deleted between the listing and the read of its
// properties (a team cleaning up, another test here) is left out; the
// other queues are still listed.
func TestAQueueDeletedWhileListedIsLeftOut(t *testing.T) {
	t.Parallel()
	c := conn(t)
	s := stem(t)
	put(t, c, s+"-poison", "a")
	put(t, c, s+"x-poison", "b")
	found, err := open(t, c, deletingFirst{t, c, s + "-poison"}).List(t.Context(), setaside.Owners{})
	if err != nil {
		t.Fatalf("listing with a queue deleted midway: %v", err)
	}
	var names []string
	for _, f := range found {
		if strings.HasPrefix(f.Name, s) {
			names = append(names, f.Name)
		}
	}
	if len(names) != 1 || names[0] != s+"x-poison" {
		t.Errorf("listed %v; want only %s-poison's neighbour %sx-poison", names, s, s)
	}
}
