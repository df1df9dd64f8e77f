package e2e_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestRunNowMakesUpAMissedSlot opens the nightly job's page, presses "Run
// now" beside the missed night, and checks that the function host (an
// in-process server standing in for Core Tools) was asked to run it.
func TestRunNowMakesUpAMissedSlot(t *testing.T) {
	srv, p, settings := signedIn(t, "olivia")
	var mu sync.Mutex
	var called []string
	host := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		called = append(called, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host.Listener = l
	host.Start()
	defer host.Close()
	// Point the demo app's local.settings.json at the stand-in host.
	var doc map[string]any
	data, _ := os.ReadFile(settings)
	json.Unmarshal(data, &doc)
	doc["Host"] = map[string]any{"LocalHttpPort": l.Addr().(*net.TCPAddr).Port}
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(settings, data, 0o600); err != nil {
		t.Fatal(err)
	}

	p.do(t,
		chromedp.Navigate(srv.URL+"/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-now"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="run-now"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)),
	)
	if got := p.text(t, `[role="status"]`); !strings.HasPrefix(got, "The function was started") {
		t.Errorf("flash says %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(called) != 1 || called[0] != "POST /admin/functions/NightlySalesSummary" {
		t.Errorf("the host got %v", called)
	}
	entries, err := srv.App.Store.Audit.Recent(t.Context(), srv.Clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Action == "ran job now" && e.Actor == "olivia" && strings.Contains(e.Detail, "for the slot of 2026-") {
			found = true
		}
	}
	if !found {
		t.Errorf("no audit entry of the run: %+v", entries)
	}
}
