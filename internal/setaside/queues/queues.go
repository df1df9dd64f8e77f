// Package queues reads and moves the work a function app set aside in its
// queue storage (internal/setaside says which queues those are): how much
// there is, how old, a peek at it, and sending it back to work. It reaches
// only the account's queue endpoint of the cloud (loopback in
// development), through the transport it is given (the guarded dialer).
package queues

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/setaside"
)

// Account reaches one app's queue storage.
type Account struct {
	client *azqueue.ServiceClient
}

// Open makes a client for setting (the app's storage connection string,
// or its queue account URL with the managed identity) and checks the
// endpoint it will call before anything is sent.
func Open(setting string, cred azcore.TokenCredential, transport policy.Transporter, endpoints egress.Endpoints) (*Account, error) {
	o := &azqueue.ClientOptions{}
	if transport != nil {
		o.Transport = transport
	}
	o.Retry.MaxRetries = -1 // the caller's deadline bounds a read; retries would only hide an account that does not answer
	var c *azqueue.ServiceClient
	var err error
	if strings.HasPrefix(setting, "https://") || strings.HasPrefix(setting, "http://") {
		if cred == nil {
			return nil, errors.New("queues: an account URL needs a managed identity, and this Fusebox has no Azure credential")
		}
		c, err = azqueue.NewServiceClient(setting, cred, o)
	} else {
		c, err = azqueue.NewServiceClientFromConnectionString(setting, o)
	}
	if err != nil {
		return nil, errors.New("queues: must be the app's storage connection string (with a queue endpoint) or its queue account URL (https://<account>.queue.core.windows.net)")
	}
	if err := endpoints.CheckQueueURL(c.URL()); err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	return &Account{client: c}, nil
}

// Found is a set-aside queue with what it holds.
type Found struct {
	setaside.Queue
	Count  int       // approximate, as the service counts it
	Oldest time.Time // the oldest message's insertion time; zero when empty
	// Expires is when the oldest message expires (the queue drops it);
	// zero when empty or when it never does (a time-to-live of -1).
	Expires time.Time
}

// List finds the set-aside queues (setaside.Classify, with the circuits'
// parking queues and owners) and their counts and ages: one properties read and one
// peek of one message per queue, never a read of what they hold.
func (a *Account) List(ctx context.Context, owners setaside.Owners) ([]Found, error) {
	var out []Found
	pager := a.client.NewListQueuesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("queues: list: %w", err)
		}
		for _, q := range page.Queues {
			if q == nil || q.Name == nil {
				continue
			}
			kind, ok := owners.Classify(*q.Name)
			if !ok {
				continue
			}
			f, err := a.describe(ctx, kind)
			if queueerror.HasCode(err, queueerror.QueueNotFound, queueerror.QueueBeingDeleted) {
				continue // deleted since the listing: nothing set aside there now
			}
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	return out, nil
}

func (a *Account) describe(ctx context.Context, q setaside.Queue) (Found, error) {
	qc := a.client.NewQueueClient(q.Name)
	props, err := qc.GetProperties(ctx, nil)
	if err != nil {
		return Found{}, fmt.Errorf("queues: %s: %w", q.Name, err)
	}
	f := Found{Queue: q}
	if props.ApproximateMessagesCount != nil {
		f.Count = int(*props.ApproximateMessagesCount)
	}
	if f.Count > 0 {
		one := int32(1)
		peek, err := qc.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: &one})
		if err != nil {
			return Found{}, fmt.Errorf("queues: %s: %w", q.Name, err)
		}
		if len(peek.Messages) > 0 && peek.Messages[0].InsertionTime != nil {
			f.Oldest = *peek.Messages[0].InsertionTime
		}
		if len(peek.Messages) > 0 && peek.Messages[0].ExpirationTime != nil && !setaside.NeverExpires(*peek.Messages[0].ExpirationTime) {
			f.Expires = *peek.Messages[0].ExpirationTime
		}
	}
	return f, nil
}

// Message is a message as peeked: a person reads it, nothing acts on it.
type Message struct {
	ID           string
	Inserted     time.Time
	DequeueCount int64
	Body         setaside.Body
}

// MaxPeek is the most messages the service shows in one peek.
const MaxPeek = 32

// Peek shows up to n (at most MaxPeek) messages at the head of queue, their
// bodies read by setaside.Read and cut to limit runes.
func (a *Account) Peek(ctx context.Context, queue string, n, limit int) ([]Message, error) {
	if !setaside.ValidQueueName(queue) {
		return nil, fmt.Errorf("queues: %q is not a queue name", queue)
	}
	count := int32(min(max(n, 1), MaxPeek))
	resp, err := a.client.NewQueueClient(queue).PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: &count})
	if err != nil {
		return nil, fmt.Errorf("queues: peek %s: %w", queue, err)
	}
	out := make([]Message, 0, len(resp.Messages))
	for _, m := range resp.Messages {
		if m == nil {
			continue
		}
		msg := Message{ID: deref(m.MessageID), DequeueCount: derefInt(m.DequeueCount), Body: setaside.Read(deref(m.MessageText), limit)}
		if m.InsertionTime != nil {
			msg.Inserted = *m.InsertionTime
		}
		out = append(out, msg)
	}
	return out, nil
}

// Moved is what a requeue or delete did.
type Moved struct {
	Moved int // requeued: put on the target and deleted from the source; or deleted
	// Doubled counts messages put on the target whose delete from the
	// source failed: they are visible in the source again after the
	// hold, and may be processed twice.
	Doubled int
}

// Move says which messages a Move takes and where they go.
type Move struct {
	From string
	To   string // "" deletes them
	// IDs picks messages by id among those at the head of From (what a
	// peek showed); nil takes every message, up to N.
	IDs  []string
	N    int
	Hold time.Duration // how long a taken message stays invisible to others
}

// Move requeues (or deletes) messages so that none is lost whatever
// happens midway: each is taken with a visibility timeout of Hold
// (invisible to others; visible again by itself if this process dies), a
// copy is put on the target, and only then is it deleted with the receipt
// of that take. A crash after the put and before the delete leaves the
// message in both queues: put twice, never gone. Messages are taken 32 at
// a time; a taken message that was not picked is released at once. It
// stops when the source is empty, after N, when every picked id is done
// (picked ids are looked for in one take only: they were at the head), or
// when ctx ends. progress, when not nil, is told after every batch.
func (a *Account) Move(ctx context.Context, mv Move, progress func(Moved)) (Moved, error) {
	var done Moved
	if !setaside.ValidQueueName(mv.From) || (mv.To != "" && !setaside.ValidQueueName(mv.To)) {
		return done, fmt.Errorf("queues: %q or %q is not a queue name", mv.From, mv.To)
	}
	if mv.From == mv.To {
		return done, errors.New("queues: a queue cannot be requeued to itself")
	}
	src := a.client.NewQueueClient(mv.From)
	var dst *azqueue.QueueClient
	if mv.To != "" {
		dst = a.client.NewQueueClient(mv.To)
	}
	picked := map[string]bool{}
	for _, id := range mv.IDs {
		picked[id] = true
	}
	n := mv.N
	if mv.IDs != nil {
		n = len(picked)
	}
	secs := int32(max(mv.Hold/time.Second, 1))
	for done.Moved+done.Doubled < n && ctx.Err() == nil {
		want := int32(min(n-done.Moved-done.Doubled, MaxPeek))
		if mv.IDs != nil {
			want = MaxPeek
		}
		got, err := src.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: &want, VisibilityTimeout: &secs})
		if err != nil {
			return done, fmt.Errorf("queues: take from %s: %w", mv.From, err)
		}
		if len(got.Messages) == 0 {
			return done, nil // empty
		}
		for _, m := range got.Messages {
			if m == nil {
				continue
			}
			id, receipt := deref(m.MessageID), deref(m.PopReceipt)
			if mv.IDs != nil && !picked[id] {
				// Not picked: visible again now, not after the hold.
				zero := int32(0)
				_, _ = src.UpdateMessage(ctx, id, receipt, deref(m.MessageText), &azqueue.UpdateMessageOptions{VisibilityTimeout: &zero})
				continue
			}
			if dst != nil {
				if _, err := dst.EnqueueMessage(ctx, deref(m.MessageText), nil); err != nil {
					return done, fmt.Errorf("queues: put on %s: %w (the message is back in %s after %s)", mv.To, err, mv.From, mv.Hold)
				}
			}
			if _, err := src.DeleteMessage(ctx, id, receipt, nil); err != nil {
				if dst == nil {
					return done, fmt.Errorf("queues: delete from %s: %w (it is back after %s)", mv.From, err, mv.Hold)
				}
				done.Doubled++
				return done, fmt.Errorf("queues: delete from %s after the put: %w (it is in both queues)", mv.From, err)
			}
			done.Moved++
		}
		if progress != nil {
			progress(done)
		}
		if mv.IDs != nil {
			return done, nil // the head was looked at once
		}
	}
	return done, ctx.Err()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}

// ErrNoStorage is an app with no storage setting to read queues from.
var ErrNoStorage = errors.New("queues: Fusebox reads nothing of this app's own storage: register its host storage under Apps, Host insight")

// Source reads apps' set-aside queues for pages and the API: through the
// guarded transport, with the Storage-only credential, within Timeout
// (default 5 s) a read.
type Source struct {
	Credential azcore.TokenCredential
	Transport  policy.Transporter
	Endpoints  egress.Endpoints
	Timeout    time.Duration
}

// SetAside lists the app's set-aside queues. An error says what kind of
// failure it was (egress.Class), never what the server answered.
func (s *Source) SetAside(ctx context.Context, app circuit.App, owners setaside.Owners) ([]Found, error) {
	return read(ctx, s, app, func(ctx context.Context, a *Account) ([]Found, error) { return a.List(ctx, owners) })
}

// read opens the app's account and reads from it within the read
// time-out; an error is the setting's or endpoint's refusal in Fusebox's
// words, or the class of the failure (egress.Class), never the server's.
func read[T any](ctx context.Context, s *Source, app circuit.App, f func(context.Context, *Account) (T, error)) (T, error) {
	var zero T
	if app.HostStorage == "" {
		return zero, ErrNoStorage
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, err := Open(app.HostStorage, s.Credential, s.Transport, s.Endpoints)
	if err != nil {
		return zero, err
	}
	out, err := f(ctx, a)
	if err != nil {
		return zero, fmt.Errorf("queues: the app's queue storage: %s", egress.Class(err))
	}
	return out, nil
}

// MaxRequeue bounds one request of the API: a larger backlog is sent
// back from the queue's page, in the background (Source.Run).
const MaxRequeue = 1000

// Run requeues or deletes messages of the app's queue, as Account.Move
// does (each held for a minute while it moves), within ctx, telling
// progress after every batch. The error says what kind of failure it was,
// never what the server answered; what moved before it is in Moved.
func (s *Source) Run(ctx context.Context, app circuit.App, mv Move, progress func(Moved)) (Moved, error) {
	if app.HostStorage == "" {
		return Moved{}, ErrNoStorage
	}
	a, err := Open(app.HostStorage, s.Credential, s.Transport, s.Endpoints)
	if err != nil {
		return Moved{}, err
	}
	if mv.Hold == 0 {
		mv.Hold = time.Minute
	}
	moved, err := a.Move(ctx, mv, progress)
	if err != nil {
		return moved, fmt.Errorf("queues: the app's queue storage: %s", egress.Class(err))
	}
	return moved, nil
}

// Peek shows up to n messages at the head of the app's queue, bodies cut
// to limit runes, within the read time-out.
func (s *Source) Peek(ctx context.Context, app circuit.App, queue string, n, limit int) ([]Message, error) {
	return read(ctx, s, app, func(ctx context.Context, a *Account) ([]Message, error) { return a.Peek(ctx, queue, n, limit) })
}
