package circuit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestRowsWrittenByTheJavaScriptSDKTripTheCircuit runs the Node script that
// follows docs/storage.md with @azure/data-tables, then lets the evaluator
// tick: Fusebox must count those rows and trip.
func TestRowsWrittenByTheJavaScriptSDKTripTheCircuit(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run the tests with `make test`")
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	r := newRig(t)
	cmd := exec.CommandContext(t.Context(), node, filepath.Join(root, "scripts", "crosslang", "report-failures.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"CONNECTION_STRING="+testenv.ConnectionString(t),
		"TABLE="+r.store.Service.TableName(storage.TableFailures),
		"APP=orders", "FUNCTION=Process", "TOTAL=101",
		"AT="+r.clock.Now().Format(time.RFC3339),
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Node script failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	r.tick()
	c := r.circuit()
	if c.State != circuit.Open || c.Reason != "101 failures in 30s (threshold 100)" {
		t.Errorf("after 101 failures written from JavaScript: %s, %q", c.State, c.Reason)
	}
	st, err := r.store.Status.Evaluator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Rejected != 0 {
		t.Errorf("the evaluator rejected rows the documented layout produced: %s", st.LastRejected)
	}
}
