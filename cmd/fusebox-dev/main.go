// Command fusebox-dev runs what `make run` needs beside Fusebox and what
// Fusebox itself must never ship: the demo's seeding, its function host,
// its Event Hubs namespace and a receiver standing in for Teams, Slack and
// webhooks. The product binary (cmd/web) links none of it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/fusebox/fusebox/client"
	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/app"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
)

const usage = `usage: fusebox-dev command

commands:
  seed-demo       migrate, then write the demo app, circuits and jobs (-local-settings PATH [-receiver URL])
  demo-receiver   stand in for Teams, Slack and a webhook receiver (-addr 127.0.0.1:8025)
  demo-host       the demo function app's stand-in host (-settings PATH -addr 127.0.0.1:7072)
  demo-hub        the demo's Event Hubs namespace: answers partition reads over AMQP (-addr 127.0.0.1:7073)
  demo-alert      fired|resolved: posts Azure Monitor's demo alert on the orders store (demo.AlertRule) to the
                  demo's webhook (-url http://127.0.0.1:8080, -state .dev/demo-alert); fired trips ProcessOrders
                  and TakeOrders, resolved puts them on trial
  serve-demo      fusebox serve, with the demo's stand-in for Azure Resource Manager (demo.ARM): Apps → Discover
                  lists the demo subscription's function apps, and guarding one switches its triggers there

Storage comes from FUSEBOX_STORAGE_CONNECTION_STRING, as for fusebox.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fusebox-dev:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	cmd := "help"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "seed-demo":
		return seedDemo(ctx, args, lookup, stdout, stderr)
	case "demo-host":
		return demoHostCmd(ctx, args, lookup, stderr)
	case "demo-hub":
		return demoHub(ctx, args, stderr)
	case "demo-receiver":
		return demoReceiver(ctx, args, stderr)
	case "serve-demo":
		return serveDemo(ctx, lookup, stderr)
	case "demo-alert":
		return demoAlert(ctx, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

func seedDemo(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seed-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	localSettings := fs.String("local-settings", "", "path of the demo function app's local.settings.json (created if missing)")
	receiver := fs.String("receiver", "", "base URL of a demo-receiver: adds Teams, Slack and webhook channels posting to it")
	live := fs.Bool("live-host", false, "a demo-host writes the demo app's checkpoints: seed none")
	hub := fs.String("hub", "", "address of a demo-hub: the demo app counts the events waiting through it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *localSettings == "" {
		return errors.New("seed-demo: -local-settings is required")
	}
	cfg, err := config.LoadStorage(lookup)
	if err != nil {
		return err
	}
	if err := app.Migrate(ctx, cfg, app.NewLogger(cfg, stderr)); err != nil {
		return err
	}
	st, err := app.OpenStore(cfg)
	if err != nil {
		return err
	}
	now := time.Now()
	if err := demo.Seed(ctx, st, *localSettings, now); err != nil {
		return err
	}
	if err := demo.SeedHistory(ctx, st, now); err != nil {
		return err
	}
	if *receiver != "" {
		if err := demo.SeedChannels(ctx, st, *receiver, time.Now()); err != nil {
			return err
		}
	}
	// With a connection string that names a blob service (Azurite's), the
	// demo app gets a still picture of what its host would keep there.
	if strings.Contains(cfg.Storage.ConnectionString.Reveal(), "BlobEndpoint=") {
		if err := demo.SeedHostStorage(ctx, st, cfg.Storage.ConnectionString.Reveal(), time.Now(), demo.HostSeed{Live: *live, HubAddr: *hub, Queues: strings.Contains(cfg.Storage.ConnectionString.Reveal(), "QueueEndpoint=")}); err != nil {
			return err
		}
	}
	if *live {
		// The live host's function has a throttle stage: its overloaded
		// store is survived at a lower batch size (docs/throttle.md).
		if err := demo.SeedThrottle(ctx, st, *localSettings); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "demo data written; the demo app's switch is %s\n", *localSettings)
	return nil
}

// demoReceiver serves demo.Receiver until ctx ends.
func demoReceiver(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo-receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8025", "where to listen")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rec, err := demo.NewReceiver(demo.WebhookSecret)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *addr, Handler: rec, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// demoHostCmd runs the demo function host (see demo.Host) until ctx ends.
func demoHostCmd(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
	fs := flag.NewFlagSet("demo-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	settings := fs.String("settings", "", "the demo app's local.settings.json")
	addr := fs.String("addr", "127.0.0.1:7072", "where its page listens")
	fusebox := fs.String("fusebox", "http://127.0.0.1:8080", "Fusebox's URL, for failure reports")
	state := fs.String("state", ".dev", "folder for the simulated hub's start time and the downstream switch")
	report := fs.String("report", "alternate", "how invocations reach Fusebox: grpc or http/protobuf (OpenTelemetry, as the Functions host exports), alternate (one, then the other, start after start), or api (the failure API's Go client); make run picks one per run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.LoadStorage(lookup)
	if err != nil {
		return err
	}
	blob, err := demo.BlobClient(cfg.Storage.ConnectionString.Reveal())
	if err != nil {
		return fmt.Errorf("demo-host: FUSEBOX_STORAGE_CONNECTION_STRING must name a blob service: %w", err)
	}
	// The hub's partitions began when the demo first ran: events keep their
	// sequence numbers across restarts of the host.
	epoch, err := demo.StreamEpoch(*state, time.Now())
	if err != nil {
		return err
	}
	stream := demo.OrdersStream(epoch)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	rep, err := demoReporter(ctx, *report, *fusebox, *state, log)
	if err != nil {
		return err
	}
	// The ledger counts each event's processing across the host's
	// restarts, for the page: none never processed is the promise.
	ledger, err := demo.OpenLedger(filepath.Join(*state, "demo-ledger"))
	if err != nil {
		return err
	}
	defer ledger.Close()
	h := &demo.Host{Settings: *settings, Ledger: ledger, Function: "ProcessOrders", Blob: blob, HostID: hostinsight.HostID("", "func-orders-demo", ""),
		Namespace: "orders-demo.servicebus.windows.net", EventHub: stream.Name, Group: "$default", Partitions: stream.Partitions, Rate: stream.Rate, Epoch: epoch, Retention: stream.Retention,
		Offline: filepath.Join(*state, "downstream-offline"), Throttling: filepath.Join(*state, "downstream-throttling"), Reporter: rep, Logger: log}
	// With a queue service (Azurite's), the app also has a queue-triggered
	// function, and ProcessOrders parks corrupt events.
	if conn := cfg.Storage.ConnectionString.Reveal(); strings.Contains(conn, "QueueEndpoint=") {
		queue := func(name string) (*azqueue.QueueClient, error) {
			return azqueue.NewQueueClientFromConnectionString(conn, name, nil)
		}
		orders, err1 := queue(demo.OrdersQueue)
		poison, err2 := queue(demo.OrdersQueue + "-poison")
		parking, err3 := queue(demo.ParkingQueue)
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("demo-host: the queue service: %w", err)
		}
		h.Parking, h.Corrupt = parking, filepath.Join(*state, "corrupt-event")
		h.Orders = &demo.OrderQueue{Queue: orders, Poison: poison, Function: "TakeOrders", Fixed: filepath.Join(*state, "parser-fixed"), Reporter: rep, Logger: log}
	}
	// The page posts Azure Monitor's alert on the orders store to the
	// secure webhook, signed as the demo's tenant, whose keys it serves.
	signer, err := demo.LoadAlertSigner(filepath.Join(*state, "demo-alert-key.pem"))
	if err != nil {
		return err
	}
	h.Alerts = &demo.HostAlerts{Fusebox: *fusebox, Signer: signer, State: demo.AlertState(filepath.Join(*state, "demo-alert")), Logger: log}
	if err := h.Start(ctx); err != nil {
		return err
	}
	go demo.RunQueueDepthCheck(ctx, *fusebox, log)
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo host page", "error", err)
		}
	}()
	return h.Run(ctx, 200*time.Millisecond)
}

// demoReporter is how the demo host tells Fusebox of its invocations.
func demoReporter(ctx context.Context, how, fusebox, state string, log *slog.Logger) (demo.Reporter, error) {
	if how == "api" {
		rep, err := client.New(client.Options{URL: fusebox, Key: demo.Key, OnError: func(err error) { log.Warn("failure report", "error", err) }})
		if err != nil {
			return nil, err
		}
		go func() { _ = rep.Run(ctx) }()
		return rep, nil
	}
	if how == "alternate" {
		// One protocol this run, the other the next: both are seen working.
		last, _ := os.ReadFile(filepath.Join(state, "otlp-protocol"))
		how = "grpc"
		if string(last) == "grpc" {
			how = "http/protobuf"
		}
		_ = os.WriteFile(filepath.Join(state, "otlp-protocol"), []byte(how), 0o600)
	}
	t, err := demo.NewTelemetry(ctx, fusebox, demo.Key, how)
	if err != nil {
		return nil, err
	}
	log.Info("the demo host exports its invocations over OpenTelemetry", "protocol", how)
	go func() {
		<-ctx.Done()
		done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = t.Shutdown(done)
	}()
	return t, nil
}

// demoHub serves the demo's orders hub as an Event Hubs namespace would
// answer reads of its partitions (see amqphub), until ctx ends.
func demoHub(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo-hub", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", demo.HubAddr, "where it listens for AMQP")
	state := fs.String("state", ".dev", "folder for the simulated hub's start time, shared with demo-host")
	if err := fs.Parse(args); err != nil {
		return err
	}
	epoch, err := demo.StreamEpoch(*state, time.Now())
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { l.Close() })
	log := slog.New(slog.NewTextHandler(stderr, nil))
	log.Info("demo hub listening", "addr", l.Addr().String(), "hub", "orders")
	return (&amqphub.Server{Hub: demo.OrdersStream(epoch).Served(), Logger: log}).Serve(l)
}

// serveDemo is fusebox serve (the same app.New) with ARM answered by the
// demo's stand-in, which the product binary never links.
func serveDemo(ctx context.Context, lookup func(string) (string, bool), stderr io.Writer) error {
	cfg, err := config.Load(lookup)
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg, stderr)
	a, err := app.New(ctx, cfg, app.Options{Logger: log, ARMCredential: &azfake.TokenCredential{}, ARMTransport: demo.ARM(cfg.Storage.ConnectionString.Reveal())})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (FUSEBOX_HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	log.Info("fusebox is serving, with the demo's stand-in for Azure Resource Manager", "addr", l.Addr().String(), "url", cfg.BaseURL.String())
	err = a.Serve(ctx, l)
	log.Info("fusebox stopped")
	return err
}

// demoAlert posts the demo rule's alert: "fired" as a new alert instance
// (its id kept in the state file), "resolved" of the last one fired.
func demoAlert(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo-alert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "http://127.0.0.1:8080", "the Fusebox to post to")
	state := fs.String("state", ".dev/demo-alert", "where the last fired alert's id and time are kept")
	if len(args) == 0 || (args[0] != "fired" && args[0] != "resolved") {
		return errors.New("demo-alert: say fired or resolved")
	}
	condition := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	now := time.Now()
	condition = strings.ToUpper(condition[:1]) + condition[1:]
	id, fired, err := demo.AlertState(*state).Next(condition, now)
	if err != nil {
		return fmt.Errorf("demo-alert: %w", err)
	}
	status, body, err := demo.PostAlert(ctx, *base, demo.AlertPayload(id, condition, fired, now))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d %s\n", status, strings.TrimSpace(body))
	if status >= 300 {
		return fmt.Errorf("demo-alert: Fusebox answered %d (is FUSEBOX_AZURE_ALERTS_SECRET the demo's? make run sets it)", status)
	}
	return nil
}
