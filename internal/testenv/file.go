package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WaitForFile waits until the file at path holds want, as a person
// watching it would see it, and returns when that was seen. It wakes on
// each change of the file's folder (a switch replaces the file by a
// rename), not on a timer, and fails the test after limit.
func WaitForFile(tb testing.TB, path, want string, limit time.Duration) time.Time {
	tb.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		tb.Fatal(err)
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		// Read after the watch is in place: a change made before it is
		// seen here, one made after wakes the loop.
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return time.Now()
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			tb.Fatalf("watching %s: %v", path, err)
		case <-deadline.C:
			b, _ := os.ReadFile(path)
			tb.Fatalf("%s does not hold %q after %s:\n%s", path, want, limit, b)
		case <-tb.Context().Done():
			tb.Fatal("the test ended while waiting")
		}
	}
}
