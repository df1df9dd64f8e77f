// Package eventhub reads, through azeventhubs, the newest sequence number
// of each partition of an event hub, so that the events waiting behind a
// function's checkpoints can be counted, and when the first of them
// arrived, so that the page can say when retention begins to drop them.
// It only reads, and never checkpoints.
package eventhub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"

	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/hostinsight"
)

// Reader reads partition heads, keeping one client per connection and
// hub.
type Reader struct {
	// Credential reads namespaces given by host name (a managed identity
	// with Azure Event Hubs Data Receiver); nil: connection strings only.
	// Give it egress.Scope'd to Event Hubs.
	Credential azcore.TokenCredential
	// Endpoints are the namespaces that may be read.
	Endpoints egress.Endpoints
	// Policy is checked against the namespace's addresses before a client
	// connects (azeventhubs takes no dialer for AMQP over TCP).
	Policy egress.Policy

	mu      sync.Mutex
	clients map[string]*azeventhubs.ConsumerClient
}

// Check says what is wrong with an app's Event Hubs setting, or nil: a
// connection string or a namespace's host name, of a namespace eps allows.
func Check(eps egress.Endpoints, conn string) error {
	if conn == "" {
		return nil
	}
	if !strings.Contains(conn, "=") {
		if strings.ContainsAny(conn, "/ ") {
			return errors.New("must be an Event Hubs connection string (Endpoint=sb://…) or the namespace's host name, such as orders.servicebus.windows.net")
		}
		return checkNamespace(eps, conn)
	}
	props, err := azeventhubs.ParseConnectionString(conn)
	if err != nil {
		return errors.New("must be an Event Hubs connection string with Listen rights (Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…)")
	}
	if props.Emulator && !eps.Development {
		return errors.New("the Event Hubs emulator (UseDevelopmentEmulator=true) is read only with FUSEBOX_ENV=development")
	}
	return checkNamespace(eps, props.FullyQualifiedNamespace)
}

func checkNamespace(eps egress.Endpoints, host string) error {
	var refused *egress.EndpointError
	if err := eps.CheckNamespace(host); errors.As(err, &refused) {
		return errors.New(refused.Reason)
	}
	return nil
}

// Heads reads partitions of hub in namespace. A connection string for
// another namespace or hub gives hostinsight.ErrOtherHub; the emulator's
// (UseDevelopmentEmulator=true) serves any namespace.
func (r *Reader) Heads(ctx context.Context, conn, namespace, hub string, partitions []string) (map[string]hostinsight.Head, error) {
	key := conn + "|" + namespace + "|" + hub
	c, err := r.client(ctx, key, conn, namespace, hub)
	if err != nil {
		return nil, err
	}
	type result struct {
		id   string
		head hostinsight.Head
		err  error
	}
	// azeventhubs sends the partition read itself without the caller's
	// context, so a namespace that never answers would hold the call
	// forever: each read runs on its own and is abandoned at ctx's end.
	results := make(chan result, len(partitions))
	for _, id := range partitions {
		go func() {
			p, err := c.GetPartitionProperties(ctx, id, nil)
			results <- result{id, hostinsight.Head{First: p.BeginningSequenceNumber, Last: p.LastEnqueuedSequenceNumber, Empty: p.IsEmpty, Enqueued: p.LastEnqueuedOn}, err}
		}()
	}
	heads := map[string]hostinsight.Head{}
	var errs []error
wait:
	for range partitions {
		select {
		case res := <-results:
			if res.err != nil {
				errs = append(errs, &readError{msg: "partition " + res.id + ": " + class(res.err), err: res.err})
				continue
			}
			heads[res.id] = res.head
		case <-ctx.Done():
			break wait
		}
	}
	switch {
	case len(heads) < len(partitions) && (ctx.Err() != nil || timedOut(errs)):
		// Closing the client ends the reads still waiting (the SDK may also
		// have given up at the deadline, in its own words); the next call
		// opens a new one.
		r.drop(key, c)
		return heads, fmt.Errorf("eventhub: %s did not answer in time: %w", hub, context.DeadlineExceeded)
	case len(heads) == 0 && len(errs) > 0:
		// Nothing answered: start over with a new connection next time. A
		// partition the hub does not have is an answer, and keeps it.
		r.drop(key, c)
	}
	return heads, errors.Join(errs...)
}

// Oldest is when the first event after sequence number after arrived on
// partition of hub: the oldest event waiting behind a checkpoint there,
// which retention drops first. It receives that one event and no more
// (no prefetch), on the $Default consumer group without an owner level:
// the service refuses it while a host holds the partition with one, and
// the host's receiver, when it comes, takes the partition back, so a read
// never holds up the function. Ask only while its trigger is off.
func (r *Reader) Oldest(ctx context.Context, conn, namespace, hub, partition string, after int64) (time.Time, error) {
	key := conn + "|" + namespace + "|" + hub
	c, err := r.client(ctx, key, conn, namespace, hub)
	if err != nil {
		return time.Time{}, err
	}
	type result struct {
		at  time.Time
		err error
	}
	// Like the partition reads: abandoned at ctx's end, whatever the SDK
	// does meanwhile.
	done := make(chan result, 1)
	go func() {
		pc, err := c.NewPartitionClient(partition, &azeventhubs.PartitionClientOptions{
			StartPosition: azeventhubs.StartPosition{SequenceNumber: &after}, Prefetch: -1})
		if err != nil {
			done <- result{err: err}
			return
		}
		defer func() { _ = pc.Close(context.WithoutCancel(ctx)) }()
		evs, err := pc.ReceiveEvents(ctx, 1, nil)
		switch {
		case err != nil:
			done <- result{err: err}
		case len(evs) == 0 || evs[0].EnqueuedTime == nil:
			done <- result{err: errors.New("the event carries no enqueued time")}
		default:
			done <- result{at: *evs[0].EnqueuedTime}
		}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			if ctx.Err() != nil {
				return time.Time{}, fmt.Errorf("eventhub: %s partition %s did not deliver its oldest waiting event in time: %w", hub, partition, context.DeadlineExceeded)
			}
			return time.Time{}, &readError{msg: "eventhub: partition " + partition + ": " + class(res.err), err: res.err}
		}
		return res.at, nil
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("eventhub: %s partition %s did not deliver its oldest waiting event in time: %w", hub, partition, context.DeadlineExceeded)
	}
}

// timedOut reports whether a read ended on a network time-out: the SDK
// sets its connection's deadline from the caller's and may report it a
// moment before the caller's context ends.
func timedOut(errs []error) bool {
	for _, err := range errs {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return true
		}
	}
	return false
}

// client is the open client for key, or a new one once conn is checked:
// it must serve hub in namespace (hostinsight.ErrOtherHub if not), name a
// namespace Endpoints allows (a row written before the rule, or by hand,
// is bad input too), and resolve to addresses Policy allows. The SDK
// resolves again when it connects: the suffix rule is what keeps that name
// in Azure's hands. The check and the connect run outside the lock, so a
// slow name or namespace holds up no other app's reads.
func (r *Reader) client(ctx context.Context, key, conn, namespace, hub string) (*azeventhubs.ConsumerClient, error) {
	r.mu.Lock()
	c, ok := r.clients[key]
	r.mu.Unlock()
	if ok {
		return c, nil
	}
	if err := Check(r.Endpoints, conn); err != nil {
		return nil, fmt.Errorf("eventhub: %w", err)
	}
	// The reads are bounded by the caller's context; retries inside it
	// would only hide a namespace that does not answer.
	opts := &azeventhubs.ConsumerClientOptions{RetryOptions: azeventhubs.RetryOptions{MaxRetries: -1}, TLSConfig: r.Policy.TLSConfig()}
	host, name := conn, hub
	byName := !strings.Contains(conn, "=") // a managed identity reads it
	if !byName {
		props, err := azeventhubs.ParseConnectionString(conn)
		if err != nil {
			return nil, errors.New("eventhub: the connection string does not parse")
		}
		host = props.FullyQualifiedNamespace
		if !props.Emulator && !strings.EqualFold(host, namespace) {
			return nil, hostinsight.ErrOtherHub
		}
		if props.EntityPath != nil {
			if !strings.EqualFold(*props.EntityPath, hub) {
				return nil, hostinsight.ErrOtherHub
			}
			name = ""
		}
	} else {
		if !strings.EqualFold(conn, namespace) {
			return nil, hostinsight.ErrOtherHub
		}
		if r.Credential == nil {
			return nil, errors.New("eventhub: a namespace host name needs a managed identity, and this Fusebox has no Azure credential")
		}
	}
	if err := r.Policy.CheckResolved(ctx, host); err != nil {
		return nil, &readError{msg: "eventhub: " + egress.Describe(host, err), err: err}
	}
	var err error
	if byName {
		c, err = azeventhubs.NewConsumerClient(conn, hub, azeventhubs.DefaultConsumerGroup, r.Credential, opts)
	} else {
		c, err = azeventhubs.NewConsumerClientFromConnectionString(conn, name, azeventhubs.DefaultConsumerGroup, opts)
	}
	if err != nil {
		return nil, errors.New("eventhub: the connection settings do not make a client")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if open, ok := r.clients[key]; ok {
		// Another caller opened one meanwhile: keep theirs.
		go func() { _ = c.Close(context.Background()) }()
		return open, nil
	}
	if r.clients == nil {
		r.clients = map[string]*azeventhubs.ConsumerClient{}
	}
	r.clients[key] = c
	return c, nil
}

func (r *Reader) drop(key string, c *azeventhubs.ConsumerClient) {
	r.mu.Lock()
	if r.clients[key] == c {
		delete(r.clients, key)
	}
	r.mu.Unlock()
	go func() { _ = c.Close(context.Background()) }()
}

// Close closes every client.
func (r *Reader) Close(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, c := range r.clients {
		_ = c.Close(ctx)
		delete(r.clients, k)
	}
}

// readError is a failed read whose text is safe to show: the SDK's own
// text carries what the namespace answered.
type readError struct {
	msg string
	err error
}

func (e *readError) Error() string { return e.msg }
func (e *readError) Unwrap() error { return e.err }

// class is the kind of failure err is, in Fusebox's words.
func class(err error) string {
	var ee *azeventhubs.Error
	if errors.As(err, &ee) && ee.Code == azeventhubs.ErrorCodeUnauthorizedAccess {
		return "access denied: give Fusebox's host-insight identity Azure Event Hubs Data Receiver on the namespace"
	}
	return egress.Class(err)
}

// Namespace is the namespace an Event Hubs setting (a connection string
// or a namespace's host name) reaches, in lower case: what two settings
// are compared by to tell whether they name one namespace.
func Namespace(conn string) (string, error) {
	if !strings.Contains(conn, "=") {
		if conn == "" || strings.ContainsAny(conn, "/ ") {
			return "", errors.New("names no Event Hubs namespace")
		}
		return strings.ToLower(conn), nil
	}
	props, err := azeventhubs.ParseConnectionString(conn)
	if err != nil {
		return "", errors.New("names no Event Hubs namespace")
	}
	return strings.ToLower(props.FullyQualifiedNamespace), nil
}
