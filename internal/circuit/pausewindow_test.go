package circuit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// A pause window reads as its form spells it and back; one that does not
// read is refused by field, and a stored one that does not read costs
// only itself.
func TestPauseWindowsReadAndAreChecked(t *testing.T) {
	for _, line := range []string{"0 2 * * 0 for 1h in Europe/Paris", "0 0 3 * * * for 45m", "2026-12-08T02:00:00Z for 1h30m"} {
		p, err := circuit.ParsePauseWindow(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		again, err := circuit.ParsePauseWindow(p.String())
		if err != nil || again.String() != p.String() {
			t.Errorf("%q read back as %q (%v)", line, again, err)
		}
	}
	app := &circuit.App{ID: "orders", Switch: circuit.SwitchLocal}
	for _, bad := range []string{"every night", "0 2 * * * for a while", "0 2 * * * for 30s", "0 2 * * * for 8d", "0 2 31 2 * for 1h", "0 2 * * * for 1h in Mars/Olympus"} {
		c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Spec{Threshold: 10, Window: circuit.Seconds(time.Minute), PauseWindows: []string{bad}}.Settings()}
		if err := c.Validate(app); err == nil || !strings.Contains(err.Error(), "pause_windows") {
			t.Errorf("%q: %v, want a problem with pause_windows", bad, err)
		}
		stored, err := circuit.Spec{Threshold: 10, Window: circuit.Seconds(time.Minute), PauseWindows: []string{bad, "0 2 * * * for 1h"}}.Stored()
		if err != nil || len(stored.PauseWindows) != 1 {
			t.Errorf("a stored %q: %d windows kept (%v), want the good one alone", bad, len(stored.PauseWindows), err)
		}
	}
}

// When a window opens on a closed circuit the evaluator pauses it until
// the window ends, then resumes it; a person who resumes it early is not
// overruled within that opening, and the next opening pauses it again.
func TestAPauseWindowPausesItsCircuitAndEnds(t *testing.T) {
	p, err := circuit.ParsePauseWindow("0 2 * * * for 1h")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 10, Window: time.Minute, PauseWindows: []circuit.PauseWindow{p}},
		State: circuit.Closed, Episode: 4, ChangedAt: day.Add(-time.Hour)}
	c.AppliedEpisode = 4
	if _, fl := circuit.Evaluate(c, circuit.Counts{}, day.Add(2*time.Hour-time.Second)); fl != nil {
		t.Fatalf("paused a second before the window: %+v", fl)
	}
	paused, fl := circuit.Evaluate(c, circuit.Counts{}, day.Add(2*time.Hour+5*time.Second))
	if fl == nil || paused.State != circuit.ForcedOpen || !paused.PauseUntil.Equal(day.Add(3*time.Hour)) || fl.Actor != circuit.PauseWindowActor {
		t.Fatalf("at the opening: %s until %s by %q", paused.State, paused.PauseUntil, fl.Actor)
	}
	paused.AppliedEpisode = paused.Episode
	if _, fl := circuit.Evaluate(paused, circuit.Counts{}, day.Add(3*time.Hour-time.Second)); fl != nil {
		t.Errorf("resumed before the window ended: %s", fl.Reason)
	}
	ended, fl := circuit.Evaluate(paused, circuit.Counts{}, day.Add(3*time.Hour))
	if fl == nil || ended.State != circuit.Closed || !strings.Contains(fl.Reason, "the pause ended") {
		t.Fatalf("at the window's end: %s (%v)", ended.State, fl)
	}
	early, _, err := circuit.Resume(paused, "bob", "the maintenance finished early", circuit.Counts{}, day.Add(2*time.Hour+10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	early.AppliedEpisode = early.Episode
	if _, fl := circuit.Evaluate(early, circuit.Counts{}, day.Add(2*time.Hour+11*time.Minute)); fl != nil {
		t.Errorf("paused again within the opening bob ended early: %s", fl.Reason)
	}
	if again, fl := circuit.Evaluate(early, circuit.Counts{}, day.Add(26*time.Hour)); fl == nil || again.State != circuit.ForcedOpen {
		t.Errorf("the next night's opening did not pause it: %v", fl)
	}
	if _, start, _, ok := circuit.NextPause(c, day); !ok || !start.Equal(day.Add(2*time.Hour)) {
		t.Errorf("the next pause: %s %v", start, ok)
	}
}
