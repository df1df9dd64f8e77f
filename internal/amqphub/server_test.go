package amqphub_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
)

// The real azeventhubs client reads what the hub says, over AMQP.
func TestTheEventHubsClientReadsPartitionsAndTheHub(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	conn := amqphubtest.ServeConnection(t, amqphub.Fixed{"orders": {
		"0": {First: 100, Last: 4711, LastOffset: "9000", LastEnqueued: at},
		"1": {First: 0, Last: -1, Empty: true},
	}})
	c, err := azeventhubs.NewConsumerClientFromConnectionString(conn, "orders", azeventhubs.DefaultConsumerGroup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	props, err := c.GetEventHubProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.Name != "orders" || strings.Join(props.PartitionIDs, ",") != "0,1" {
		t.Fatalf("hub properties = %+v", props)
	}
	p0, err := c.GetPartitionProperties(ctx, "0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p0.LastEnqueuedSequenceNumber != 4711 || p0.BeginningSequenceNumber != 100 || p0.IsEmpty || p0.LastEnqueuedOffset != "9000" || !p0.LastEnqueuedOn.Equal(at) || p0.PartitionID != "0" {
		t.Fatalf("partition 0 = %+v", p0)
	}
	// A second read on the same connection, of the other partition.
	p1, err := c.GetPartitionProperties(ctx, "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p1.IsEmpty || p1.LastEnqueuedSequenceNumber != -1 {
		t.Fatalf("partition 1 = %+v", p1)
	}
}

func TestAnUnknownHubOrPartitionIsAnError(t *testing.T) {
	conn := amqphubtest.ServeConnection(t, amqphub.Fixed{"orders": {}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"orders", "payments"} {
		c, err := azeventhubs.NewConsumerClientFromConnectionString(conn, name, azeventhubs.DefaultConsumerGroup,
			&azeventhubs.ConsumerClientOptions{RetryOptions: azeventhubs.RetryOptions{MaxRetries: -1}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetPartitionProperties(ctx, "7", nil)
		_ = c.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), "could not be found") {
			t.Fatalf("%s partition 7: err = %v, want one that says it could not be found", name, err)
		}
	}
}

// A peer that sends nonsense loses its own connection, and no one else's.
func TestAPeerSpeakingNonsenseIsDisconnected(t *testing.T) {
	addr := amqphubtest.Serve(t, amqphub.Fixed{"orders": {"0": {Last: 5}}})
	conn := amqphub.ConnectionString(addr)
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		append([]byte("AMQP\x00\x01\x00\x00"), 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0),              // a 4 GiB frame
		append([]byte("AMQP\x00\x01\x00\x00"), 0, 0, 0, 12, 2, 0, 0, 0, 0x00, 0x53, 0x99, 0x45), // an unknown performative
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(junk); err != nil {
			t.Fatal(err)
		}
		// The server answers with its header, at most, and hangs up.
		buf := make([]byte, 64)
		n := 0
		for err == nil {
			var k int
			k, err = c.Read(buf[n:])
			n += k
		}
		c.Close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("after %q the server kept the connection open", junk)
		}
		if n > 8 {
			t.Errorf("after %q the server sent %q", junk, buf[:n])
		}
	}
	c, err := azeventhubs.NewConsumerClientFromConnectionString(conn, "orders", azeventhubs.DefaultConsumerGroup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if p, err := c.GetPartitionProperties(ctx, "0", nil); err != nil || p.LastEnqueuedSequenceNumber != 5 {
		t.Fatalf("a client after the nonsense: %+v, %v", p, err)
	}
}

// A client that keeps asking is never starved of credit: thousands of
// reads on one connection, more than one grant of link credit.
func TestManyReadsOnOneConnection(t *testing.T) {
	conn := amqphubtest.ServeConnection(t, amqphub.Fixed{"orders": {"0": {Last: 7}}})
	c, err := azeventhubs.NewConsumerClientFromConnectionString(conn, "orders", azeventhubs.DefaultConsumerGroup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 2500 {
		if p, err := c.GetPartitionProperties(ctx, "0", nil); err != nil || p.LastEnqueuedSequenceNumber != 7 {
			t.Fatalf("read %d: %+v, %v", i, p, err)
		}
	}
}

// A partition receiver started after a sequence number gets the events
// after it, stamped with when each arrived; one started before the first
// retained event gets that one, as from the service.
func TestTheEventHubsClientReceivesTheEventsAfterASequenceNumber(t *testing.T) {
	first := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	conn := amqphubtest.ServeConnection(t, amqphub.Fixed{"orders": {
		"0": {First: 100, Last: 200, FirstEnqueued: first, LastEnqueued: first.Add(100 * time.Second)},
	}})
	c, err := azeventhubs.NewConsumerClientFromConnectionString(conn, "orders", azeventhubs.DefaultConsumerGroup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, tc := range []struct {
		after, want int64
	}{{141, 142}, {10, 100}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		pc, err := c.NewPartitionClient("0", &azeventhubs.PartitionClientOptions{StartPosition: azeventhubs.StartPosition{SequenceNumber: &tc.after}, Prefetch: -1})
		if err != nil {
			t.Fatal(err)
		}
		got, err := pc.ReceiveEvents(ctx, 2, nil)
		cancel()
		_ = pc.Close(context.Background())
		if err != nil {
			t.Fatalf("after %d: %v", tc.after, err)
		}
		if len(got) != 2 || got[0].SequenceNumber != tc.want || got[1].SequenceNumber != tc.want+1 {
			t.Fatalf("after %d: received %d events, first %+v", tc.after, len(got), got)
		}
		if at := first.Add(time.Duration(tc.want-100) * time.Second); got[0].EnqueuedTime == nil || !got[0].EnqueuedTime.Equal(at) {
			t.Fatalf("after %d: event %d enqueued %v, want %v", tc.after, tc.want, got[0].EnqueuedTime, at)
		}
	}
}
