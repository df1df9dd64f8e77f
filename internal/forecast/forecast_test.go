package forecast_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/forecast"
	"github.com/fusebox/fusebox/internal/replay"
)

// history is checkpoint samples every 10 s over two partitions: first a
// catch-up (each partition read 100 events/s), then keeping up with 10
// events/s arriving on each.
func history(now time.Time) []replay.Sample {
	var out []replay.Sample
	seq := int64(1000)
	for at := now.Add(-time.Hour); !at.After(now); at = at.Add(10 * time.Second) {
		step := int64(100) // 10 events/s on each partition
		if at.Before(now.Add(-50 * time.Minute)) {
			step = 1000 // catching up after an earlier pause
		}
		seq += step
		out = append(out, replay.Sample{At: at, Marks: []replay.Mark{{Key: "ns/hub/$default/0", Sequence: seq, HasSequence: true}, {Key: "ns/hub/$default/1", Sequence: seq, HasSequence: true}}})
	}
	return out
}

// The rate is the recent advance, the catch-up what it read at its
// fastest less what keeps arriving; a pause as long as the retention
// loses events; with no history, nothing is guessed.
func TestAForecastReadsTheCheckpointHistory(t *testing.T) {
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	f := forecast.Of(history(now), now, time.Hour, 24*time.Hour)
	if !f.Known || f.Rate < 19.9 || f.Rate > 20.1 {
		t.Fatalf("rate %.2f (known %v), want 20 events/s over both partitions", f.Rate, f.Known)
	}
	if f.Fastest < 199 || f.Fastest > 201 {
		t.Errorf("fastest %.1f, want 200/s (the catch-up)", f.Fastest)
	}
	if f.Backlog != 72_000 || f.CatchUp != 400*time.Second || f.Expires {
		t.Errorf("backlog %d, catch-up %s, expires %v; want 72,000 waiting, 400 s (72,000 / (200 − 20)), none expiring", f.Backlog, f.CatchUp, f.Expires)
	}
	if w := f.Words(); !strings.Contains(w, "about 72000 wait") || !strings.Contains(w, "catches up in about 6m40s") || !strings.Contains(w, "none expires") {
		t.Errorf("words: %s", w)
	}
	long := forecast.Of(history(now), now, 24*time.Hour, 24*time.Hour)
	if !long.Expires || !strings.Contains(long.Words(), "expire before the trigger comes back on") {
		t.Errorf("a pause as long as the retention: %+v %s", long, long.Words())
	}
	none := forecast.Of(nil, now, time.Hour, 0)
	if none.Known || none.Expires || !strings.Contains(none.Words(), "too short") {
		t.Errorf("no history: %+v %s", none, none.Words())
	}
}
