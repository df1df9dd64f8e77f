package demo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/demo"
)

// The ledger says the same after a restart as before it, its file is
// written again as runs (a line per run and count, not per batch), and a
// line naming a partition it does not count is skipped.
func TestTheLedgerSurvivesARestartAsRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	l, err := demo.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(0, 100); err != nil {
		t.Fatal(err)
	}
	for seq := int64(100); seq < 600; seq++ { // a batch of one event at a time
		if err := l.Done(0, seq, seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Done(0, 200, 249); err != nil { // replayed once more
		t.Fatal(err)
	}
	want := l.Tally(0, 699) // 100 never (600..699), 450 once, 50 twice
	if want != (demo.Tally{Never: 100, Once: 450, More: 50}) {
		t.Fatalf("tally %+v", want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("base 999999999 5 0\ndone 999999999 5 10\n")
	f.Close()

	again, err := demo.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.Tally(0, 699); got != want {
		t.Errorf("after a restart the ledger says %+v, before %+v", got, want)
	}
	if got := again.Tally(999999999, 10); got != (demo.Tally{}) {
		t.Errorf("a partition it does not count says %+v", got)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines > 5 {
		t.Errorf("the file holds %d lines after a restart, want the runs only (base, 100..199, 200..249 twice, 250..599):\n%s", lines, b)
	}
}
