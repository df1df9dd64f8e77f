package main

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// untouched fails the test when a command reads standard input.
type untouched struct{ t *testing.T }

func (u untouched) Read([]byte) (int, error) {
	u.t.Error("the command read standard input")
	return 0, io.EOF
}

// Every command answers -h and --help with its own usage on standard
// output and succeeds without acting: with no configuration at all, a
// command that went on would fail (serve, migrate, app-key, export) or read
// standard input (hash-password, apply -f -). An unknown flag is an error
// that names it.
func TestEveryCommandAnswersHelpWithoutActing(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, cmd := range []string{"serve", "migrate", "local-host", "hash-password", "app-key", "api-token", "export", "apply", "version"} {
		for _, help := range []string{"-h", "--help"} {
			var out, errs bytes.Buffer
			if err := run(t.Context(), []string{cmd, help}, none, untouched{t}, &out, &errs); err != nil {
				t.Errorf("fusebox %s %s: %v", cmd, help, err)
			}
			if !strings.HasPrefix(out.String(), "usage: fusebox "+cmd) {
				t.Errorf("fusebox %s %s printed %q, want its own usage", cmd, help, out.String())
			}
		}
		var out, errs bytes.Buffer
		err := run(t.Context(), []string{cmd, "--no-such-flag"}, none, untouched{t}, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), "no-such-flag") || !strings.Contains(err.Error(), "usage: fusebox "+cmd) {
			t.Errorf("fusebox %s --no-such-flag: %v, want an error naming the flag, with the usage", cmd, err)
		}
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"--help"}, none, untouched{t}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "version ") {
		t.Errorf("fusebox --help: %v, %q: want the list of commands", err, out.String())
	}
	if err := run(t.Context(), []string{"serve", "extra"}, none, untouched{t}, io.Discard, io.Discard); err == nil {
		t.Error("fusebox serve extra: no error")
	}
}

// A binary built as make build and the Dockerfile build it (scripts/ldflags.sh's
// flags) prints the version and commit it was stamped with: a wrong -X
// path would leave "dev" and "unknown" without a word from the linker.
func TestAStampedBuildPrintsItsVersion(t *testing.T) {
	flags, err := exec.Command("../../scripts/ldflags.sh").Output()
	if err != nil {
		t.Fatalf("scripts/ldflags.sh: %v", err)
	}
	commit, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "fusebox")
	if out, err := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "(commit "+strings.TrimSpace(string(commit))) || strings.Contains(string(out), "fusebox dev ") {
		t.Errorf("the stamped binary says %q, want its commit %s and a version", out, commit)
	}
}
