package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/fusebox/fusebox/client"
	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/app"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/localhost"
	"github.com/fusebox/fusebox/internal/storage"
)

const usage = `usage: fusebox [command]

commands:
  serve           run the server (the default)
  migrate         apply storage migrations and exit
  seed-demo       write the demo app, circuits and jobs (-local-settings PATH [-receiver URL])
  demo-receiver   stand in for Teams, Slack and a webhook receiver (-addr 127.0.0.1:8025)
  demo-host       the demo function app's stand-in host (-settings PATH -addr 127.0.0.1:7072)
  demo-hub        the demo's Event Hubs namespace: answers partition reads over AMQP (-addr 127.0.0.1:7073)
  local-host      run a local function host and restart it when its Disabled settings change
                  (-settings PATH/local.settings.json -- func start ...)
  hash-password   read a password on standard input, print its bcrypt hash
  app-key APP     make a new failure-reporting key for an app (the old one stops working)
  api-token NAME ROLE   make a token for the JSON API and print the FUSEBOX_API_TOKENS entry

Configuration comes from FUSEBOX_* environment variables: see docs/configuration.md.`

func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, lookup, stderr)
	case "migrate":
		return migrateCmd(ctx, lookup, stderr)
	case "seed-demo":
		return seedDemo(ctx, args, lookup, stdout, stderr)
	case "demo-host":
		return demoHostCmd(ctx, args, lookup, stderr)
	case "demo-hub":
		return demoHub(ctx, args, stderr)
	case "local-host":
		return localHost(ctx, args, stdout, stderr)
	case "demo-receiver":
		return demoReceiver(ctx, args, stderr)
	case "hash-password":
		return hashPassword(stdin, stdout)
	case "app-key":
		return appKey(ctx, args, lookup, stdout)
	case "api-token":
		return apiToken(args, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Env == config.Development {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func serve(ctx context.Context, lookup func(string) (string, bool), stderr io.Writer) error {
	cfg, err := config.Load(lookup)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	a, err := app.New(ctx, cfg, app.Options{Logger: log})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (FUSEBOX_HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	log.Info("fusebox is serving", "addr", l.Addr().String(), "url", cfg.BaseURL.String())
	err = a.Serve(ctx, l)
	log.Info("fusebox stopped")
	return err
}

func migrateCmd(ctx context.Context, lookup func(string) (string, bool), stderr io.Writer) error {
	cfg, err := config.LoadStorage(lookup)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	svc, err := app.OpenStorage(cfg, nil)
	if err != nil {
		return err
	}
	locker, err := app.NewLocker(ctx, svc, cfg.Leases, nil, clock.Real{}, log)
	if err != nil {
		return err
	}
	runner, err := app.Migrator(svc, locker, log)
	if err != nil {
		return err
	}
	applied, err := runner.Apply(ctx)
	if err != nil {
		return err
	}
	log.Info("storage is up to date", "version", runner.Latest(), "applied_now", applied)
	return nil
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
	if err := migrateCmd(ctx, lookup, stderr); err != nil {
		return err
	}
	st, err := openStore(lookup)
	if err != nil {
		return err
	}
	if err := demo.Seed(ctx, st, *localSettings, time.Now()); err != nil {
		return err
	}
	if *receiver != "" {
		if err := demo.SeedChannels(ctx, st, *receiver, time.Now()); err != nil {
			return err
		}
	}
	// With a connection string that names a blob service (Azurite's), the
	// demo app gets a still picture of what its host would keep there.
	if cfg, err := config.LoadStorage(lookup); err == nil && strings.Contains(cfg.Storage.ConnectionString.Reveal(), "BlobEndpoint=") {
		if err := demo.SeedHostStorage(ctx, st, cfg.Storage.ConnectionString.Reveal(), time.Now(), demo.HostSeed{Live: *live, HubAddr: *hub}); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "demo data written; the demo app's switch is %s\n", *localSettings)
	return nil
}

// openStore connects to storage alone, for commands that only read or
// write rows.
func openStore(lookup func(string) (string, bool)) (*storage.Store, error) {
	cfg, err := config.LoadStorage(lookup)
	if err != nil {
		return nil, err
	}
	svc, err := app.OpenStorage(cfg, nil)
	if err != nil {
		return nil, err
	}
	return storage.New(svc), nil
}

func appKey(ctx context.Context, args []string, lookup func(string) (string, bool), stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("app-key: name the app: fusebox app-key orders-prod")
	}
	st, err := openStore(lookup)
	if err != nil {
		return err
	}
	a, err := st.Apps.Get(ctx, args[0])
	if err != nil {
		return err
	}
	key, hash := auth.NewAppKey(a.ID)
	a.APIKeyHash = hash
	if err := st.Apps.Put(ctx, a); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n\nThis is the only time the key is shown. Give it to the app's functions (for example as the app setting FUSEBOX_KEY); the previous key no longer works.\n", key)
	return nil
}

func apiToken(args []string, stdout io.Writer) error {
	if len(args) != 2 || (args[1] != "viewer" && args[1] != "operator") {
		return errors.New("api-token: give a name and a role: fusebox api-token deploy-bot operator")
	}
	token, hash := auth.NewAPIToken()
	fmt.Fprintf(stdout, "token (give it to the script; shown only now):\n  %s\n\nadd to FUSEBOX_API_TOKENS (comma-separated):\n  %s:%s:%s\n", token, args[0], args[1], hash)
	return nil
}

func hashPassword(stdin io.Reader, stdout io.Writer) error {
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	password := strings.TrimRight(line, "\r\n")
	if len(password) < 8 || len(password) > 72 {
		return errors.New("hash-password: the password must be 8 to 72 bytes long")
	}
	h, err := auth.HashPassword(password)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, h)
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

// localHost runs a function host under a localhost.Supervisor.
func localHost(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("local-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	settings := fs.String("settings", "local.settings.json", "the app's local.settings.json")
	grace := fs.Duration("grace", 10*time.Second, "how long the host may take to stop before it is killed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	path, err := filepath.Abs(*settings)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	s := &localhost.Supervisor{Settings: path, Command: fs.Args(), Grace: *grace, Stdout: stdout, Stderr: stderr, Logger: log}
	return s.Run(ctx)
}

// demoHostCmd runs the demo function host (see demo.Host) until ctx ends.
func demoHostCmd(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) error {
	fs := flag.NewFlagSet("demo-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	settings := fs.String("settings", "", "the demo app's local.settings.json")
	addr := fs.String("addr", "127.0.0.1:7072", "where its page listens")
	fusebox := fs.String("fusebox", "http://127.0.0.1:8080", "Fusebox's URL, for failure reports")
	state := fs.String("state", ".dev", "folder for the simulated hub's start time and the downstream switch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.LoadStorage(lookup)
	if err != nil {
		return err
	}
	blob, err := azblob.NewClientFromConnectionString(cfg.Storage.ConnectionString.Reveal(), nil)
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
	rep, err := client.New(client.Options{URL: *fusebox, Key: demo.Key, OnError: func(err error) { log.Warn("failure report", "error", err) }})
	if err != nil {
		return err
	}
	go func() { _ = rep.Run(ctx) }()
	h := &demo.Host{Settings: *settings, Function: "ProcessOrders", Blob: blob, HostID: hostinsight.HostID("", "func-orders-demo", ""),
		Namespace: "orders-demo.servicebus.windows.net", EventHub: stream.Name, Group: "$default", Partitions: stream.Partitions, Rate: stream.Rate, Epoch: epoch, Retention: stream.Retention,
		Offline: filepath.Join(*state, "downstream-offline"), Reporter: rep, Logger: log}
	if err := h.Start(ctx); err != nil {
		return err
	}
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
