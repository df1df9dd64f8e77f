package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/fusebox/fusebox/internal/buildinfo"
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

const usage = `usage: fusebox [command] [flags]

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
  version         print the version, commit and Go version of this build

Every command answers -h or --help with its own usage.
export and apply use the HTTP API: FUSEBOX_URL and FUSEBOX_API_TOKEN.

Configuration comes from FUSEBOX_* environment variables: see docs/configuration.md.
The demo that make run starts is a separate binary, fusebox-dev (cmd/fusebox-dev).`

func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	case "serve", "migrate", "local-host", "hash-password", "app-key", "api-token", "export", "apply", "version":
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, lookup, stdout, stderr)
	case "migrate":
		return migrateCmd(ctx, args, lookup, stdout, stderr)
	case "local-host":
		return localHost(ctx, args, stdout, stderr)
	case "hash-password":
		return hashPassword(args, stdin, stdout)
	case "app-key":
		return appKey(ctx, args, lookup, stdout)
	case "api-token":
		return apiToken(args, stdout)
	case "export":
		return exportCmd(ctx, args, lookup, stdout)
	case "apply":
		return applyCmd(ctx, args, lookup, stdin, stdout)
	default: // version
		return versionCmd(args, stdout)
	}
}

// command is one command's flags and usage. parse reads args: -h or
// --help prints the usage on stdout and returns flag.ErrHelp; an unknown flag,
// or a number of arguments outside [minArgs, maxArgs] (maxArgs < 0: any),
// is an error that carries the usage.
type command struct {
	*flag.FlagSet
	synopsis, about  string
	minArgs, maxArgs int
	stdout           io.Writer
}

func newCommand(name, synopsis, about string, minArgs, maxArgs int, stdout io.Writer) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &command{FlagSet: fs, synopsis: synopsis, about: about, minArgs: minArgs, maxArgs: maxArgs, stdout: stdout}
}

func (c *command) usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: fusebox %s %s\n\n%s\n", c.Name(), c.synopsis, c.about)
	n := 0
	c.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nflags:\n")
		c.SetOutput(&b)
		c.PrintDefaults()
		c.SetOutput(io.Discard)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (c *command) parse(args []string) error {
	err := c.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(c.stdout, c.usage())
		return flag.ErrHelp // done turns it into success: the command did nothing else
	case err != nil:
		return fmt.Errorf("%s: %w\n%s", c.Name(), err, c.usage())
	case c.NArg() < c.minArgs || (c.maxArgs >= 0 && c.NArg() > c.maxArgs):
		return fmt.Errorf("%s: %d arguments given\n%s", c.Name(), c.NArg(), c.usage())
	}
	return nil
}

// done turns the help answer into success.
func done(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func versionCmd(args []string, stdout io.Writer) error {
	c := newCommand("version", "", "Print the version, commit and Go version of this build.", 0, 0, stdout)
	if err := c.parse(args); err != nil {
		return done(err)
	}
	fmt.Fprintln(stdout, buildinfo.Get())
	return nil
}

func migrateCmd(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	c := newCommand("migrate", "", "Apply Fusebox's storage migrations under the migration lease, then exit.\nConfiguration: FUSEBOX_STORAGE_* (docs/configuration.md).", 0, 0, stdout)
	if err := c.parse(args); err != nil {
		return done(err)
	}
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

func serve(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	c := newCommand("serve", "", "Run the server: the dashboard, the APIs and the background work.\nConfiguration comes from FUSEBOX_* environment variables (docs/configuration.md).", 0, 0, stdout)
	if err := c.parse(args); err != nil {
		return done(err)
	}
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
	log.Info("fusebox is serving", "addr", l.Addr().String(), "url", cfg.BaseURL.String(), "version", buildinfo.Get().Version)
	err = a.Serve(ctx, l)
	log.Info("fusebox stopped")
	return err
}

func appKey(ctx context.Context, args []string, lookup func(string) (string, bool), stdout io.Writer) error {
	c := newCommand("app-key", "APP", "Make a new failure-reporting key for APP and print it once; the app's previous key stops working.\nExample: fusebox app-key orders-prod", 1, 1, stdout)
	if err := c.parse(args); err != nil {
		return done(err)
	}
	st, err := openStore(lookup)
	if err != nil {
		return err
	}
	a, err := st.Apps.Get(ctx, c.Arg(0))
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
	c := newCommand("api-token", "NAME ROLE", "Make a token for the JSON API and print it once, with the FUSEBOX_API_TOKENS entry that makes it work.\nROLE is viewer or operator. Example: fusebox api-token deploy-bot operator", 2, 2, stdout)
	if err := c.parse(args); err != nil {
		return done(err)
	}
	name, role := c.Arg(0), c.Arg(1)
	if role != "viewer" && role != "operator" {
		return fmt.Errorf("api-token: the role is viewer or operator, not %q", role)
	}
	token, hash := auth.NewAPIToken()
	fmt.Fprintf(stdout, "token (give it to the script; shown only now):\n  %s\n\nadd to FUSEBOX_API_TOKENS (comma-separated):\n  %s:%s:%s\n", token, name, role, hash)
	return nil
}

func hashPassword(args []string, stdin io.Reader, stdout io.Writer) error {
	c := newCommand("hash-password", "", "Read a password (8 to 72 bytes) on standard input and print its bcrypt hash, for FUSEBOX_LOCAL_USERS.", 0, 0, stdout)
	if err := c.parse(args); err != nil {
		return done(err)
	}
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
	fs := newCommand("local-host", "[flags] -- COMMAND [ARGS...]", "Run a local function host (such as: func start) and restart it whenever the\nAzureWebJobs.<Function>.Disabled settings of its local.settings.json change.", 1, -1, stdout)
	settings := fs.String("settings", "local.settings.json", "the app's local.settings.json")
	grace := fs.Duration("grace", 10*time.Second, "how long the host may take to stop before it is killed")
	if err := fs.parse(args); err != nil {
		return done(err)
	}
	path, err := filepath.Abs(*settings)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	s := &hostsupervisor.Supervisor{Settings: path, Command: fs.Args(), Grace: *grace, Stdout: stdout, Stderr: stderr, Logger: log}
	return s.Run(ctx)
}
