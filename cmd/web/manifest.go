package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/fusebox/fusebox/internal/manifest"
)

// errChanges is apply --dry-run's answer when something would change: the
// process exits 2, as diff and terraform plan -detailed-exitcode do.
var errChanges = errors.New("changes to make")

// apiClient is the client of export and apply: FUSEBOX_URL and
// FUSEBOX_API_TOKEN.
func apiClient(lookup func(string) (string, bool)) (*manifest.Client, error) {
	base, _ := lookup("FUSEBOX_URL")
	token, _ := lookup("FUSEBOX_API_TOKEN")
	if base == "" || token == "" {
		return nil, errors.New("set FUSEBOX_URL (such as https://fusebox.example.com) and FUSEBOX_API_TOKEN (a token from fusebox api-token: viewer to export, operator to apply)")
	}
	return &manifest.Client{Base: base, Token: token, HTTP: &http.Client{Timeout: time.Minute}}, nil
}

// exportCmd writes Fusebox's apps, circuits, jobs, channels and open
// maintenance windows as a file, secrets named, never written.
func exportCmd(ctx context.Context, args []string, lookup func(string) (string, bool), stdout io.Writer) error {
	fs := newCommand("export", "", "Write Fusebox's apps, circuits, jobs, channels and open maintenance windows as YAML on\nstandard output; secrets are named, never written. Uses FUSEBOX_URL and FUSEBOX_API_TOKEN (a viewer's).", 0, 0, stdout)
	if err := fs.parse(args); err != nil {
		return done(err)
	}
	c, err := apiClient(lookup)
	if err != nil {
		return err
	}
	doc, err := c.Current(ctx)
	if err != nil {
		return err
	}
	b, err := manifest.Marshal(doc, `Fusebox configuration, from fusebox export. Apply it with: fusebox apply -f FILE
Secrets are not written: each *_env names the variable apply reads the secret from;
with the variable unset, the secret Fusebox holds is kept.`)
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}

// applyCmd makes Fusebox match a file: every problem of the file first,
// with its line, and nothing changed if there is one; then the plan, and
// with --dry-run only the plan (exit 0: nothing to change, 2: changes).
func applyCmd(ctx context.Context, args []string, lookup func(string) (string, bool), stdin io.Reader, stdout io.Writer) error {
	fs := newCommand("apply", "-f FILE [--dry-run] [--prune]", "Make Fusebox match FILE (from fusebox export). Every problem of the file is listed, with its\nline, and nothing changes while there is one. Uses FUSEBOX_URL and FUSEBOX_API_TOKEN (an operator's).", 0, 0, stdout)
	file := fs.String("f", "", "the file (- for standard input)")
	dry := fs.Bool("dry-run", false, "print the plan and change nothing; exit 2 when something would change")
	prune := fs.Bool("prune", false, "remove circuits, jobs and channels, and end maintenance windows, that the file does not name (never apps)")
	if err := fs.parse(args); err != nil {
		return done(err)
	}
	if *file == "" {
		return errors.New("apply: give the file with -f FILE")
	}
	data, err := readFile(*file, stdin)
	if err != nil {
		return err
	}
	doc, problems := manifest.Parse(data)
	if len(problems) > 0 {
		return fmt.Errorf("%s: nothing was changed:\n%w", *file, problems)
	}
	c, err := apiClient(lookup)
	if err != nil {
		return err
	}
	current, err := c.Current(ctx)
	if err != nil {
		return err
	}
	doc.Normalize()
	doc.FillTeams(current.Caller)
	env := manifest.Env(lookup)
	if problems := manifest.Check(doc, current, *prune, env); len(problems) > 0 {
		return fmt.Errorf("%s: nothing was changed:\n%w", *file, problems)
	}
	plan := manifest.MakePlan(doc, current, *prune, env)
	if *dry {
		fmt.Fprint(stdout, plan.String())
		if !plan.Empty() {
			return errChanges
		}
		return nil
	}
	if err := c.Apply(ctx, plan.Changes, env, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d changed, %d unchanged\n", len(plan.Changes), plan.Unchanged)
	return nil
}

// readFile reads a file or standard input, refusing one larger than a
// file may be before reading it whole.
func readFile(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, manifest.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > manifest.MaxBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, manifest.MaxBytes)
	}
	return b, nil
}
