package localsettings_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fusebox/fusebox/internal/switches/localsettings"
)

func TestSetDisabledKeepsEverythingElse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local.settings.json")
	original := `{"IsEncrypted": false, "Values": {"AzureWebJobsStorage": "UseDevelopmentStorage=true", "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated", "AzureWebJobs_Orders_Disabled": "1"}, "Host": {"LocalHttpPort": 7071}}`
	if err := os.WriteFile(path, []byte(original), 0o640); err != nil {
		t.Fatal(err)
	}
	if off, err := localsettings.Disabled(path, "Orders"); err != nil || !off {
		t.Fatalf("underscore form: Disabled = %v (err %v), want true", off, err)
	}
	if err := localsettings.SetDisabled(path, "Receipts", true); err != nil {
		t.Fatal(err)
	}
	if err := localsettings.SetDisabled(path, "Orders", false); err != nil {
		t.Fatal(err)
	}

	var doc struct {
		IsEncrypted bool
		Values      map[string]string
		Host        map[string]int
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("file is no longer JSON: %v\n%s", err, data)
	}
	want := map[string]string{
		"AzureWebJobsStorage":            "UseDevelopmentStorage=true",
		"FUNCTIONS_WORKER_RUNTIME":       "dotnet-isolated",
		"AzureWebJobs.Receipts.Disabled": "true",
	}
	if len(doc.Values) != len(want) {
		t.Errorf("Values = %v, want %v", doc.Values, want)
	}
	for k, v := range want {
		if doc.Values[k] != v {
			t.Errorf("Values[%s] = %q, want %q", k, doc.Values[k], v)
		}
	}
	if doc.Host["LocalHttpPort"] != 7071 {
		t.Errorf("Host section lost: %v", doc.Host)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", st.Mode().Perm())
	}
	for fn, wantOff := range map[string]bool{"Orders": false, "Receipts": true} {
		if off, err := localsettings.Disabled(path, fn); err != nil || off != wantOff {
			t.Errorf("Disabled(%s) = %v (err %v), want %v", fn, off, err, wantOff)
		}
	}
	all, err := localsettings.DisabledFunctions(path)
	if err != nil || len(all) != 1 || !all["Receipts"] {
		t.Errorf("DisabledFunctions = %v (err %v), want only Receipts", all, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestSetDisabledRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"Values": [1, 2]}`), 0o600)
	if err := localsettings.SetDisabled(bad, "Orders", true); err == nil {
		t.Error("a file whose Values is not an object was overwritten")
	}
	if data, _ := os.ReadFile(bad); string(data) != `{"Values": [1, 2]}` {
		t.Errorf("the unreadable file was changed to %s", data)
	}
	if err := localsettings.SetDisabled(filepath.Join(dir, "x.json"), "../etc", true); err == nil {
		t.Error("a function name with a path in it was accepted")
	}
}

func TestWhereKeepsTheSwitchInItsDirectory(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A link inside the root that points out of it.
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	w := localsettings.Where{Root: root}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(root, "app", "local.settings.json"), true},
		{filepath.Join(outside, "local.settings.json"), false},
		{filepath.Join(root, "escape", "local.settings.json"), false},
		{filepath.Join(root, "app", "..", "..", "local.settings.json"), false},
		{filepath.Join(root, "app", "other.json"), false},
		{"app/local.settings.json", false},
	} {
		_, err := w.Check(tc.path)
		if (err == nil) != tc.ok {
			t.Errorf("Check(%s) = %v, want ok %v", tc.path, err, tc.ok)
		}
	}
	if _, err := (localsettings.Where{}).Check(filepath.Join(root, "app", "local.settings.json")); !errors.Is(err, localsettings.ErrNotHere) {
		t.Errorf("no root, not development: %v, want ErrNotHere", err)
	}
	if _, err := (localsettings.Where{Anywhere: true}).Check(filepath.Join(outside, "local.settings.json")); err != nil {
		t.Errorf("development: %v", err)
	}
}
