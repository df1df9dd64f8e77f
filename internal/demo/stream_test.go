package demo_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/demo"
)

// The demo host and the demo hub start side by side: whichever comes
// first sets the hub's start, and both get the same one.
func TestTheStreamEpochIsSetOnceForEveryone(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	got := make([]time.Time, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			var err error
			if got[i], err = demo.StreamEpoch(dir, base.Add(time.Duration(i)*time.Second)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, g := range got {
		if !g.Equal(got[0]) {
			t.Fatalf("epochs differ: %v", got)
		}
	}
	if later, err := demo.StreamEpoch(dir, base.Add(time.Hour)); err != nil || !later.Equal(got[0]) {
		t.Errorf("a restart got %v, %v; want %v", later, err, got[0])
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files left in the state folder, want the epoch alone", len(entries))
	}
}

func TestAnEpochFileThatIsNoTimeSaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "demo-hub-epoch"), []byte("yesterday"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.StreamEpoch(dir, time.Now()); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("err = %v, want one that says to remove the file", err)
	}
}
