package web

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Keys come from verified apps, but a fleet may be large: past maxTallied
// a minute's keys, calls count under "other", and the summary's memory and
// lines stay bounded.
func TestTheMinutesSummaryIsBounded(t *testing.T) {
	var tally intakeTally
	for i := range maxTallied + 1000 {
		tally.add(fmt.Sprintf("app-%d", i), time.Millisecond, 10)
	}
	tally.add("app-0", 2*time.Second, 10)
	var out bytes.Buffer
	tally.flush(t.Context(), slog.New(slog.NewTextHandler(&out, nil)))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != maxTallied+1 {
		t.Errorf("%d summary lines, want %d (one per kept key, and other)", len(lines), maxTallied+1)
	}
	if !strings.Contains(out.String(), "from=other calls=1000 ") || !strings.Contains(out.String(), "from=app-0 calls=2 slow=1") {
		t.Errorf("the overflow or the slow call is not counted:\n%.500s", out.String())
	}
	out.Reset()
	tally.flush(t.Context(), slog.New(slog.NewTextHandler(&out, nil)))
	if out.Len() != 0 {
		t.Errorf("a second flush repeats the minute: %.200s", out.String())
	}
}
