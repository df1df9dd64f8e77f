package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/testenv"
)

// standInHost is a local function host's admin API, at the port the
// app's local.settings.json names: it keeps each call ("POST /admin/
// functions/Name") and signals it on arrived.
func standInHost(t *testing.T, settings string) (calls func() []string, arrived <-chan struct{}) {
	var mu sync.Mutex
	var got []string
	signal := make(chan struct{}, 100)
	host := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		signal <- struct{}{}
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host.Listener = l
	host.Start()
	t.Cleanup(host.Close)
	var doc map[string]any
	data, _ := os.ReadFile(settings)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["Host"] = map[string]any{"LocalHttpPort": l.Addr().(*net.TCPAddr).Port}
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(settings, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }, signal
}

// An hourly job with the "each" misfire policy missed its last three
// slots: the scanner makes each up once, even across passes; one with
// "once" runs once; none runs while the job's circuit holds its trigger
// off.
func TestMissedSlotsAreMadeUp(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, nil)
	settings := t.TempDir() + "/local.settings.json"
	if err := demo.Seed(t.Context(), srv.App.Store, settings, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	calls, arrived := standInHost(t, settings)
	now := srv.Clock.Now()
	created := now.Truncate(time.Hour).Add(-3*time.Hour - time.Minute)
	for _, j := range []jobs.Job{
		{ID: "11111111-2222-4333-8444-0000000000e1", Name: "Each", AppID: demo.AppID, Function: "ExportEach", Schedule: "0 * * * *", TimeZone: "UTC",
			Grace: 5 * time.Minute, CreatedAt: created, Status: jobs.Up, Misfire: jobs.MisfireEach},
		{ID: "11111111-2222-4333-8444-0000000000e2", Name: "Once", AppID: demo.AppID, Function: "ExportOnce", Schedule: "0 * * * *", TimeZone: "UTC",
			Grace: 5 * time.Minute, CreatedAt: created, Status: jobs.Up, Misfire: jobs.MisfireOnce},
		// SyncInventory's circuit is open in the demo: its job waits.
		{ID: "11111111-2222-4333-8444-0000000000e3", Name: "Held", AppID: demo.AppID, Function: "SyncInventory", Schedule: "0 * * * *", TimeZone: "UTC",
			Grace: 5 * time.Minute, CreatedAt: created, Status: jobs.Up, Misfire: jobs.MisfireEach},
		// Garbled's circuit row does not read: whether its trigger is held
		// off is unknown, so its job waits too (the guard fails closed).
		{ID: "11111111-2222-4333-8444-0000000000e4", Name: "Unknown", AppID: demo.AppID, Function: "Garbled", Schedule: "0 * * * *", TimeZone: "UTC",
			Grace: 5 * time.Minute, CreatedAt: created, Status: jobs.Up, Misfire: jobs.MisfireEach},
	} {
		if err := srv.App.Store.Jobs.Put(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	// A threshold of 0 is a row another program wrote badly: it does not read.
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: "Garbled", Settings: circuit.Settings{Threshold: 0, Window: 30 * time.Second}, State: circuit.Open}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "Garbled"); err == nil {
		t.Fatal("the garbled circuit row reads")
	}
	if c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory"); err != nil || c.State != circuit.Open {
		t.Fatalf("the demo's SyncInventory should be open: %+v %v", c, err)
	}
	count := func(fn string) int {
		n := 0
		for _, p := range calls() {
			if p == "POST /admin/functions/"+fn {
				n++
			}
		}
		return n
	}
	// Two scans (the scanner runs every 30 s): wait for the host's calls.
	for range 2 {
		srv.Clock.Advance(30 * time.Second)
		deadline := time.After(20 * time.Second)
		for count("ExportEach") < 3 || count("ExportOnce") < 1 {
			select {
			case <-arrived:
			case <-deadline:
				t.Fatalf("after 20 s the host got %v", calls())
			}
		}
	}
	// A third scan must make nothing up again: wait until the scanner has
	// recorded a pass after it (its loop job's last run), then count.
	srv.Clock.Advance(30 * time.Second)
	passed := srv.Clock.Now()
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		j, err := srv.App.Store.Jobs.Get(t.Context(), "f0c5b0c5-0000-4000-8000-000000000006")
		return err == nil && !j.LastRunAt.Before(passed), "no scanner pass recorded after the third advance"
	})
	if n := count("ExportEach"); n != 3 {
		t.Errorf("each: %d runs for 3 missed slots over three scans, want 3", n)
	}
	if n := count("ExportOnce"); n != 1 {
		t.Errorf("once: %d runs, want 1", n)
	}
	if n := count("SyncInventory"); n != 0 {
		t.Errorf("a job whose circuit holds its trigger off was run %d times", n)
	}
	if n := count("Garbled"); n != 0 {
		t.Errorf("a job whose circuit could not be read was run %d times", n)
	}
	// Each run is audited once: "caught up job", or "catch-up failed" with
	// the reason when the outcome is not known (the test's 30 s jumps can
	// lapse the scanner's lease while the host answers; the slot stays
	// claimed, so it is never run twice). Wait for the entries.
	caught := 0
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		entries, err := srv.App.Store.Audit.Recent(t.Context(), srv.Clock.Now(), 50)
		if err != nil {
			t.Fatal(err)
		}
		caught = 0
		for _, e := range entries {
			if e.Action == "caught up job" || e.Action == "catch-up failed" {
				caught++
			}
		}
		return caught >= 4, fmt.Sprintf("%d catch-up audit entries, want one for each of the 4 runs", caught)
	})
	if caught != 4 {
		t.Errorf("%d catch-up audit entries, want one for each of the 4 runs", caught)
	}
	if !strings.Contains(strings.Join(calls(), " "), "ExportEach") {
		t.Error("no run reached the host")
	}
}
