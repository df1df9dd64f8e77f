package hostsupervisor_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/hostsupervisor"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestMain lets the test binary play the host: with FUSEBOX_FAKE_HOST set
// it reads local.settings.json as Core Tools does at start, writes what it
// saw to a log, and runs until interrupted.
func TestMain(m *testing.M) {
	if log := os.Getenv("FUSEBOX_FAKE_HOST"); log != "" {
		// The handler goes in before the start is logged: an interrupt
		// that came between the two killed it without its "stop" (CI saw
		// it under load).
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT)
		off, _ := localsettings.DisabledFunctions(os.Getenv("FUSEBOX_FAKE_SETTINGS"))
		var names []string
		for f, d := range off {
			if d {
				names = append(names, f)
			}
		}
		f, _ := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintf(f, "start disabled=%s\n", strings.Join(names, ","))
		f.Close()
		if os.Getenv("FUSEBOX_FAKE_STUBBORN") == "" {
			<-sig
		} else {
			signal.Ignore(syscall.SIGINT)
			select {} // only a kill stops it
		}
		f, _ = os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0o644)
		fmt.Fprintln(f, "stop")
		f.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// waitLog waits, bounded, until the host's log has n lines.
func waitLog(t *testing.T, path string, n int) []string {
	t.Helper()
	var lines []string
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(path)
		lines = strings.Fields(strings.ReplaceAll(string(b), "start disabled=", "start:"))
		return len(lines) >= n, fmt.Sprintf("host log %q, want %d lines", b, n)
	})
	return lines
}

func TestTheHostRestartsWhenADisabledKeyChanges(t *testing.T) {
	dir := t.TempDir()
	settings, log := filepath.Join(dir, "local.settings.json"), filepath.Join(dir, "host.log")
	if err := os.WriteFile(settings, []byte(`{"IsEncrypted": false, "Values": {"FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FUSEBOX_FAKE_HOST", log)
	t.Setenv("FUSEBOX_FAKE_SETTINGS", settings)
	self, _ := os.Executable()
	s := &hostsupervisor.Supervisor{Settings: settings, Command: []string{self}, Poll: 20 * time.Millisecond, Grace: 5 * time.Second}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	waitLog(t, log, 1)
	if err := localsettings.SetDisabled(settings, "ProcessOrders", true); err != nil {
		t.Fatal(err)
	}
	got := waitLog(t, log, 3)
	if strings.Join(got[:3], " ") != "start: stop start:ProcessOrders" {
		t.Errorf("host log %v: want a stop and a start that read ProcessOrders disabled", got)
	}
	// Another setting changing does not restart it.
	raw, _ := os.ReadFile(settings)
	if err := os.WriteFile(settings, []byte(strings.Replace(string(raw), "dotnet-isolated", "node", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := localsettings.SetDisabled(settings, "ProcessOrders", false); err != nil {
		t.Fatal(err)
	}
	got = waitLog(t, log, 5)
	if len(got) != 5 || got[3] != "stop" || got[4] != "start:" {
		t.Errorf("host log %v: want exactly one more restart, for the resume", got)
	}
	// A host option set as a setting (what a throttle lowers) restarts it,
	// as Azure restarts an app whose settings change.
	batch := "2"
	if err := localsettings.Tune(settings, nil, map[string]*string{"AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize": &batch}); err != nil {
		t.Fatal(err)
	}
	got = waitLog(t, log, 7)
	if len(got) != 7 || got[5] != "stop" || got[6] != "start:" {
		t.Errorf("host log %v: want a restart for the lowered batch size", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := waitLog(t, log, 8); got[7] != "stop" {
		t.Errorf("the host was not stopped at the end: %v", got)
	}
}

func TestAStubbornHostIsKilledAfterTheGrace(t *testing.T) {
	dir := t.TempDir()
	settings, log := filepath.Join(dir, "local.settings.json"), filepath.Join(dir, "host.log")
	if err := os.WriteFile(settings, []byte(`{"Values": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FUSEBOX_FAKE_HOST", log)
	t.Setenv("FUSEBOX_FAKE_SETTINGS", settings)
	t.Setenv("FUSEBOX_FAKE_STUBBORN", "1")
	self, _ := os.Executable()
	s := &hostsupervisor.Supervisor{Settings: settings, Command: []string{self}, Poll: 20 * time.Millisecond, Grace: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitLog(t, log, 1)
	if err := localsettings.SetDisabled(settings, "Sync", true); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := waitLog(t, log, 2)
	if got[1] != "start:Sync" {
		t.Errorf("host log %v: want the stubborn host killed (no stop line) and started again", got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the restart took %s with a 300 ms grace", took)
	}
	cancel()
	<-done
}
