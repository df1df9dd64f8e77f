package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
)

// OrderQueue is a stand-in for a queue-triggered function (TakeOrders)
// as the Functions queue extension runs it, for `make run` and tests. What
// it copies from the extension:
//   - a message that throws becomes visible again after the visibility
//     timeout (here Retry) and is tried again;
//   - once it has been tried MaxDequeue times (maxDequeueCount, 5 by
//     default), it is put on "<queue>-poison" as it was and deleted from
//     the queue: the stream goes on;
//   - the function reads AzureWebJobs.<name>.Disabled at start (Host does).
//
// An order whose sku is "BROKEN" fails while the parser is not fixed: the
// Fixed file's existence is the fix, so it survives restarts as a deploy
// does.
type OrderQueue struct {
	Queue      *azqueue.QueueClient
	Poison     *azqueue.QueueClient
	Function   string
	Fixed      string // a file: the parser handles BROKEN orders
	MaxDequeue int64  // default 5
	Retry      time.Duration
	Processed  func(body string) // told of each order handled
	Reporter   Reporter
	Logger     *slog.Logger

	mu       sync.Mutex
	failures int
	done     int
	poisoned int
}

// Order is a demo order as it travels on the queue.
type Order struct {
	ID  int    `json:"order"`
	SKU string `json:"sku"`
}

// BrokenSKU is the sku the demo's parser fails on until fixed.
const BrokenSKU = "BROKEN"

// Start creates the queues.
func (q *OrderQueue) Start(ctx context.Context) error {
	if q.MaxDequeue <= 0 {
		q.MaxDequeue = 5
	}
	if q.Retry <= 0 {
		q.Retry = time.Second
	}
	if q.Logger == nil {
		q.Logger = slog.New(slog.DiscardHandler)
	}
	for _, c := range []*azqueue.QueueClient{q.Queue, q.Poison} {
		if _, err := c.Create(ctx, nil); err != nil && !queueerror.HasCode(err, queueerror.QueueAlreadyExists) {
			return fmt.Errorf("demo: create a queue: %w", err)
		}
	}
	return nil
}

// Send puts an order on the queue; broken ones fail until fixed.
func (q *OrderQueue) Send(ctx context.Context, id int, broken bool) error {
	o := Order{ID: id, SKU: "TEA-250"}
	if broken {
		o.SKU = BrokenSKU
	}
	body, _ := json.Marshal(o)
	_, err := q.Queue.EnqueueMessage(ctx, string(body), nil)
	return err
}

// Step takes what is visible on the queue and runs the function on it.
func (q *OrderQueue) Step(ctx context.Context, now time.Time) error {
	n, secs := int32(16), int32(max(q.Retry/time.Second, 1))
	got, err := q.Queue.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: &n, VisibilityTimeout: &secs})
	if err != nil {
		return fmt.Errorf("demo: take orders: %w", err)
	}
	var errs []error
	for _, m := range got.Messages {
		if m == nil || m.MessageText == nil || m.MessageID == nil || m.PopReceipt == nil {
			continue
		}
		body := *m.MessageText
		if err := q.run(body); err != nil {
			q.count(func() { q.failures++ })
			if q.Reporter != nil {
				q.Reporter.Failures(q.Function, 1, now, err.Error())
			}
			if m.DequeueCount != nil && *m.DequeueCount >= q.MaxDequeue {
				// What the extension does: a copy to the poison queue,
				// then the delete.
				if _, err := q.Poison.EnqueueMessage(ctx, body, nil); err != nil {
					errs = append(errs, err)
					continue
				}
				q.count(func() { q.poisoned++ })
				q.Logger.Info("demo order moved to the poison queue", "body", body, "tries", *m.DequeueCount)
			} else {
				continue // visible again after the visibility timeout
			}
		} else {
			q.count(func() { q.done++ })
			if q.Processed != nil {
				q.Processed(body)
			}
			if q.Reporter != nil {
				q.Reporter.Successes(q.Function, 1, now)
			}
		}
		if _, err := q.Queue.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// run is the function's body.
func (q *OrderQueue) run(body string) error {
	var o Order
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		return fmt.Errorf("not an order: %w", err)
	}
	if strings.EqualFold(o.SKU, BrokenSKU) && !q.IsFixed() {
		return fmt.Errorf("order %d: unknown sku %q", o.ID, o.SKU)
	}
	return nil
}

// IsFixed says whether the parser handles broken orders now.
func (q *OrderQueue) IsFixed() bool {
	_, err := os.Stat(q.Fixed)
	return q.Fixed != "" && err == nil
}

// ToggleFix fixes the parser, or breaks it again.
func (q *OrderQueue) ToggleFix() error {
	if q.IsFixed() {
		return os.Remove(q.Fixed)
	}
	return os.WriteFile(q.Fixed, []byte("fixed\n"), 0o644)
}

func (q *OrderQueue) count(f func()) { q.mu.Lock(); defer q.mu.Unlock(); f() }

// Counts are how many orders failed a try, were handled, and were set aside.
func (q *OrderQueue) Counts() (failures, done, poisoned int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures, q.done, q.poisoned
}

// Name is the queue's name.
func (q *OrderQueue) Name() string { return queueName(q.Queue) }

func queueName(c *azqueue.QueueClient) string {
	u := strings.TrimRight(c.URL(), "/")
	return u[strings.LastIndex(u, "/")+1:]
}
