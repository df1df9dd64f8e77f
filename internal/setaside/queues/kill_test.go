package queues_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"golang.org/x/sync/errgroup"

	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestMain lets the test binary be the process that is killed midway.
func TestMain(m *testing.M) {
	if os.Getenv("FUSEBOX_MOVE_CHILD") != "" {
		moveAndReport()
		return
	}
	os.Exit(m.Run())
}

// moveAndReport requeues every message of $FROM to $TO, printing how many
// moved after each batch, until it is killed.
func moveAndReport() {
	a, err := queues.Open(os.Getenv("FUSEBOX_MOVE_CONN"), nil, nil, egress.Endpoints{Development: true})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	_, err = a.Move(context.Background(), queues.Move{From: os.Getenv("FUSEBOX_MOVE_FROM"), To: os.Getenv("FUSEBOX_MOVE_TO"), N: 1 << 20, Hold: 2 * time.Second},
		func(m queues.Moved) { fmt.Println("moved", m.Moved) })
	fmt.Println("done", err)
}

// A requeue whose process is killed (SIGKILL) midway loses nothing: once
// the hold of what it had taken ends, every message is in the poison
// queue or the work queue, and the only ones in both are those the count
// of "put twice" allows for (at most the one batch in flight).
func TestARequeueKilledMidwayLeavesEveryMessageSomewhere(t *testing.T) {
	c := conn(t)
	s := stem(t)
	const total = 300
	var bodies []string
	for i := range total {
		bodies = append(bodies, fmt.Sprintf("order-%03d", i))
	}
	put(t, c, s)
	put(t, c, s+"-poison", bodies...)

	child := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "FUSEBOX_MOVE_CHILD=1", "FUSEBOX_MOVE_CONN="+c, "FUSEBOX_MOVE_FROM="+s+"-poison", "FUSEBOX_MOVE_TO="+s)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	moved := 0
	for moved < 64 && lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) == 2 && f[0] == "moved" {
			moved, _ = strconv.Atoi(f[1])
		}
	}
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) // where in the next batch the cut lands, not a wait for anything
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if moved < 64 || moved >= total {
		t.Fatalf("killed after %d moved; want it killed midway", moved)
	}

	// After the 2 s hold, whatever the killed process had taken is visible
	// again. Count every body in both queues, reading with a hold of our
	// own so each is read once.
	var inPoison, inWork map[string]int
	both := 0
	testenv.Eventually(t, 15*time.Second, func() (bool, string) { // the hold ends by itself
		inPoison, inWork = drainRead(t, c, s+"-poison"), drainRead(t, c, s)
		missing := 0
		both = 0
		for _, b := range bodies {
			switch {
			case inPoison[b] == 0 && inWork[b] == 0:
				missing++
			case inPoison[b] > 0 && inWork[b] > 0:
				both++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d messages are in neither queue after the kill", missing, total)
	})
	t.Logf("killed after %d moved: %d in the work queue, %d back in the poison queue, %d in both (put, not yet deleted)", moved, len(inWork), len(inPoison), both)
	if both > queues.MaxPeek {
		t.Errorf("%d messages in both queues; at most one batch (%d) can be", both, queues.MaxPeek)
	}
}

// drainRead reads every visible message of queue without deleting it,
// each hidden for a few seconds so a body is read once per call.
func drainRead(t *testing.T, c, queue string) map[string]int {
	t.Helper()
	qc, err := azqueue.NewQueueClientFromConnectionString(c, queue, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	n, hide := int32(32), int32(5)
	for {
		resp, err := qc.DequeueMessages(t.Context(), &azqueue.DequeueMessagesOptions{NumberOfMessages: &n, VisibilityTimeout: &hide})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Messages) == 0 {
			break
		}
		for _, m := range resp.Messages {
			got[*m.MessageText]++
			zero := int32(0)
			defer func() {
				_, _ = qc.UpdateMessage(context.Background(), *m.MessageID, *m.PopReceipt, *m.MessageText, &azqueue.UpdateMessageOptions{VisibilityTimeout: &zero})
			}()
		}
	}
	return got
}

// counting counts the requests a client makes.
type counting struct{ n *atomic.Int64 }

func (c counting) Do(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultClient.Do(req)
}

// A poison queue of 10,000 messages is listed with its count and age in
// three requests (the account's list, the queue's properties, a peek of
// one), and a peek reads 32: nothing reads them all.
func TestTenThousandMessagesAreCountedWithoutReadingThem(t *testing.T) {
	c := testenv.PrivateQueueService(t) // 10,000 messages would slow every other test's queues
	s := stem(t)
	put(t, c, s+"-poison")
	// One try each, given a minute: a try that timed out under load and
	// was sent again would enqueue its message twice, and the queue would
	// rightly count 10,001.
	once := azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1, TryTimeout: time.Minute}}
	qc, err := azqueue.NewQueueClientFromConnectionString(c, s+"-poison", &azqueue.ClientOptions{ClientOptions: once})
	if err != nil {
		t.Fatal(err)
	}
	const total, writers = 10_000, 64
	var g errgroup.Group
	for w := range writers {
		g.Go(func() error {
			for i := w; i < total; i += writers {
				if _, err := qc.EnqueueMessage(t.Context(), fmt.Sprintf("order-%05d", i), nil); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	a := open(t, c, counting{&n})
	found, err := a.List(t.Context(), setaside.Owners{})
	if err != nil {
		t.Fatal(err)
	}
	var mine *queues.Found
	for i := range found {
		if found[i].Name == s+"-poison" {
			mine = &found[i]
		}
	}
	listed := n.Load()
	if mine == nil || mine.Count != total || mine.Oldest.IsZero() {
		t.Fatalf("the queue reads %+v, want %d messages and an oldest time", mine, total)
	}
	// The list is one request (per 5,000 queues); every set-aside queue in
	// the shared account costs one more, and one that holds work a third.
	want := int64(1 + len(found))
	for _, f := range found {
		if f.Count > 0 {
			want++
		}
	}
	if listed != want {
		t.Errorf("listing made %d requests for %d set-aside queues, want %d", listed, len(found), want)
	}
	n.Store(0)
	msgs, err := a.Peek(t.Context(), s+"-poison", queues.MaxPeek, 300)
	if err != nil || len(msgs) != queues.MaxPeek || n.Load() != 1 {
		t.Fatalf("peek: %d messages in %d requests (%v), want %d in 1", len(msgs), n.Load(), err, queues.MaxPeek)
	}
}
