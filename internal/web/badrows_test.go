package web_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Rows written by another program that do not parse, in every table
// Fusebox reads, are skipped and listed with their key and fault; every
// page still renders and every other circuit still trips.
func TestBadRowsInEveryTableStopNothing(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run the tests with `make test`")
	}
	srv, _ := apptest.Seeded(t)
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	cmd := exec.CommandContext(t.Context(), node, filepath.Join(root, "scripts", "crosslang", "write-bad-rows.mjs"))
	cmd.Dir = root
	const job = "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03"
	month := srv.Clock.Now().UTC().Format("2006-01")
	cmd.Env = append(os.Environ(), "CONNECTION_STRING="+testenv.ConnectionString(t), "PREFIX="+srv.Config.Storage.TablePrefix, "JOB="+job, "MONTH="+month)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Node script failed: %v\n%s", err, out)
	}

	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	for _, path := range []string{"/circuits", "/apps", "/jobs", "/jobs/" + job, "/jobs/maintenance", "/notifications", "/channels", "/audit", "/circuits/" + demo.AppID + "/ProcessOrders", "/tokens", "/teams", "/alerts", "/downstreams", "/downstreams/" + demo.Store} {
		wantStatus(t, b.get(path), http.StatusOK)
	}
	// The scanner reads the bad run on its next pass.
	srv.Clock.Advance(30 * time.Second)

	// Every other circuit still trips.
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 101}]}`), http.StatusAccepted)
	srv.Clock.Advance(time.Second)
	waitOpen(t, srv, "ProcessOrders")

	// The overview names each bad row and what is wrong with it.
	want := []string{"orders-demo/c|Melted", "orders-demo/c|Wordy", "app/broken-app", "job/not-a-job", "window/bad-window", "job/bad-misfire", job + "/0000000000000000000~x",
		"channel/plain-http", "channel/pigeon", "msg/bad-message", "orders-demo/209901010000|traces|bad-source", "orders-demo/209901010000|logs|bad-count",
		"orders-demo/orders-poison", "orders-demo/bad-samples-poison", "orders-demo/!run-orders-poison", month + "/0000000000000000000-bad", "token/0123456789abcdef",
		"team/forged-team", month + "/bad-alert", "downstream/melted-db", "downstream/windy-db"}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) { // the scanner reads runs on its own pass
		body := b.get("/").body
		for _, key := range want {
			if !strings.Contains(body, key) {
				return false, fmt.Sprintf("the overview does not list %s:\n%s", key, body)
			}
		}
		return true, ""
	})
	// The downstream whose pause window does not read still acts: listed,
	// without the window.
	if list := b.get("/downstreams").body; !strings.Contains(list, `href="/downstreams/windy-db"`) || strings.Contains(list, `href="/downstreams/melted-db"`) {
		t.Errorf("the downstreams listed:\n%s", section(list, `data-testid="downstreams"`))
	}
	metrics := b.get("/metrics").body
	if !strings.Contains(metrics, `fusebox_unreadable_rows{table="Circuits"} 2`) {
		t.Errorf("metrics lack the count of unreadable circuit rows:\n%s", testenv.GrepLines(metrics, "unreadable"))
	}
}

// The status rows' tallies are Fusebox's own, but a hand-edited one that
// does not read stops neither the pages, nor /readyz, nor a scrape.
func TestABadTallyStopsNothing(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	type statusRow struct {
		tablestore.Meta
		LastTickAt time.Time
		Tally      string
	}
	for _, key := range []string{"evaluator", "scanner"} {
		row := &statusRow{Meta: tablestore.Meta{PartitionKey: "status", RowKey: key}, LastTickAt: srv.Clock.Now(), Tally: "{not json"}
		if err := srv.App.Store.Service.Table("Status").Upsert(t.Context(), row); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	wantStatus(t, b.get("/"), http.StatusOK)
	wantStatus(t, b.get("/readyz"), http.StatusOK)
	if m := b.get("/metrics"); !strings.Contains(m.body, "fusebox_state_up 1") {
		t.Errorf("a bad tally broke the state metrics:\n%s", testenv.GrepLines(m.body, "fusebox_state"))
	}
}
