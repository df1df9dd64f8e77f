package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/demo"
)

// TestExportAndApplyFromTheCommandLine: fusebox export writes the demo's
// configuration; apply --dry-run of it says there is nothing to change
// (exit 0), of a changed file what would change (exit 2, errChanges), and
// changes nothing; a file with a problem is refused with its line; apply
// makes the change.
func TestExportAndApplyFromTheCommandLine(t *testing.T) {
	token, hash := auth.NewAPIToken()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + hash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FUSEBOX_URL": srv.URL, "FUSEBOX_API_TOKEN": token}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fusebox := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(t.Context(), args, lookup, strings.NewReader(""), &out, &errs)
		return out.String(), err
	}
	exported, err := fusebox("export")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fusebox.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(exported)
	if out, err := fusebox("apply", "-f", file, "--dry-run"); err != nil || !strings.Contains(out, "0 to change") {
		t.Errorf("dry run of the export: %v\n%s", err, out)
	}
	write(strings.Replace(exported, "threshold: 50", "threshold: 60", 1)) // SyncInventory
	out, err := fusebox("apply", "-f", file, "--dry-run")
	if !errors.Is(err, errChanges) || !strings.Contains(out, "~ update circuit orders-demo/SyncInventory") || !strings.Contains(out, "threshold: 50 -> 60") {
		t.Errorf("dry run of a change: %v (want errChanges, exit 2)\n%s", err, out)
	}
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory"); c.Threshold != 50 {
		t.Errorf("the dry run changed the threshold to %d", c.Threshold)
	}
	write(strings.Replace(exported, "threshold: 50", "threshold: many", 1))
	if _, err := fusebox("apply", "-f", file); err == nil || !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), "line ") {
		t.Errorf("a file with a problem: %v, want it refused with its line", err)
	}
	write(strings.Replace(exported, "threshold: 50", "threshold: 60", 1))
	if out, err := fusebox("apply", "-f", file); err != nil || !strings.Contains(out, "1 changed") {
		t.Errorf("apply: %v\n%s", err, out)
	}
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory"); c.Threshold != 60 {
		t.Errorf("after apply the threshold is %d, want 60", c.Threshold)
	}
	delete(env, "FUSEBOX_API_TOKEN")
	if _, err := fusebox("export"); err == nil || !strings.Contains(err.Error(), "FUSEBOX_API_TOKEN") {
		t.Errorf("export without a token: %v", err)
	}
}
