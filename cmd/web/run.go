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
	"path/filepath"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/app"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/hostsupervisor"
	"github.com/fusebox/fusebox/internal/storage"
)

const usage = `usage: fusebox [command]

commands:
  serve           run the server (the default)
  migrate         apply storage migrations and exit
  local-host      run a local function host and restart it when its Disabled settings change
                  (-settings PATH/local.settings.json -- func start ...)
  hash-password   read a password on standard input, print its bcrypt hash
  app-key APP     make a new failure-reporting key for an app (the old one stops working)
  api-token NAME ROLE   make a token for the JSON API and print the FUSEBOX_API_TOKENS entry
  export          write apps, circuits, jobs, channels and maintenance windows as YAML (secrets named, never written)
  apply -f FILE [--dry-run] [--prune]
                  make Fusebox match FILE; --dry-run prints the plan and exits 0 (no change) or 2 (changes)

export and apply use the HTTP API: FUSEBOX_URL and FUSEBOX_API_TOKEN.

Configuration comes from FUSEBOX_* environment variables: see docs/configuration.md.
The demo that make run starts is a separate binary, fusebox-dev (cmd/fusebox-dev).`

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
	case "local-host":
		return localHost(ctx, args, stdout, stderr)
	case "hash-password":
		return hashPassword(stdin, stdout)
	case "app-key":
		return appKey(ctx, args, lookup, stdout)
	case "api-token":
		return apiToken(args, stdout)
	case "export":
		return exportCmd(ctx, args, lookup, stdout)
	case "apply":
		return applyCmd(ctx, args, lookup, stdin, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

func migrateCmd(ctx context.Context, lookup func(string) (string, bool), stderr io.Writer) error {
	cfg, err := config.LoadStorage(lookup)
	if err != nil {
		return err
	}
	return app.Migrate(ctx, cfg, app.NewLogger(cfg, stderr))
}

// openStore connects to storage alone, for commands that only read or
// write rows.
func openStore(lookup func(string) (string, bool)) (*storage.Store, error) {
	cfg, err := config.LoadStorage(lookup)
	if err != nil {
		return nil, err
	}
	return app.OpenStore(cfg)
}

func serve(ctx context.Context, lookup func(string) (string, bool), stderr io.Writer) error {
	cfg, err := config.Load(lookup)
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg, stderr)
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

// localHost runs a function host under a hostsupervisor.Supervisor.
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
	s := &hostsupervisor.Supervisor{Settings: path, Command: fs.Args(), Grace: *grace, Stdout: stdout, Stderr: stderr, Logger: log}
	return s.Run(ctx)
}
