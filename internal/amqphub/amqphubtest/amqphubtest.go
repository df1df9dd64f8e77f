// Package amqphubtest serves an amqphub.Hub on a loopback port for the
// length of a test or benchmark.
package amqphubtest

import (
	"testing"

	"github.com/fusebox/fusebox/internal/amqphub"
)

// Serve serves hub until tb ends and returns the address it listens on;
// amqphub.ConnectionString(addr) is the connection string for it.
func Serve(tb testing.TB, hub amqphub.Hub) string {
	tb.Helper()
	addr, stop, err := (&amqphub.Server{Hub: hub}).Start("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return addr
}

// ServeConnection serves hub until tb ends and returns the connection
// string an Event Hubs client uses for it.
func ServeConnection(tb testing.TB, hub amqphub.Hub) string {
	tb.Helper()
	return amqphub.ConnectionString(Serve(tb, hub))
}
