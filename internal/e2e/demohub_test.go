package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// demoHub is a seeded demo's ProcessOrders wired to a hub of the test's
// own: two partitions of 20 events a second, served as an Event Hubs
// namespace would answer reads of its partitions (which Fusebox makes
// through azeventhubs to count the events waiting), its checkpoints in
// the test Azurite, and the host reporting as the real one does with two
// app settings and no code: its own OpenTelemetry export, over gRPC.
type demoHub struct {
	blob     *azblob.Client
	tag, hub string
	app      circuit.App
	stream   demo.Stream
	rep      *demo.Telemetry
}

func wireDemoHub(t *testing.T, srv *apptest.Server) demoHub {
	t.Helper()
	conn := testenv.ConnectionString(t)
	bc, err := azblob.NewClientFromConnectionString(conn, &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	tag := strings.ToLower(strings.ReplaceAll(testenv.Prefix(t), "_", ""))
	d := demoHub{blob: bc, tag: tag, hub: "orders-" + tag}
	if d.app, err = srv.App.Store.Apps.Get(t.Context(), demo.AppID); err != nil {
		t.Fatal(err)
	}
	d.stream = demo.Stream{Name: d.hub, Partitions: 2, Rate: 20, Epoch: time.Now()}
	d.app.HostStorage, d.app.HostID, d.app.EventHubs = conn, "demo-"+tag, amqphub.ConnectionString(amqphubtest.Serve(t, d.stream.Served()))
	if err := srv.App.Store.Apps.Put(t.Context(), d.app); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.EventHub = tag + ".servicebus.windows.net/" + d.hub + "/$default"
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), ci); err != nil {
		t.Fatal(err)
	}
	if d.rep, err = demo.NewTelemetry(t.Context(), srv.URL, demo.Key, "grpc"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.rep.Shutdown(context.WithoutCancel(t.Context())) })
	return d
}
