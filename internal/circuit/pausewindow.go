package circuit

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/spoken"
)

// PauseWindow is a planned pause of a circuit: one-off (From, for
// Duration) or recurring (each slot of Recurs in TimeZone, for Duration).
// The evaluator pauses the circuit when one opens (if it is closed and
// nobody changed it since the opening began) and resumes it when it ends,
// as a pause by hand.
type PauseWindow struct {
	From     time.Time // a one-off's start; zero for a recurring one
	Recurs   string    // cron (5 fields) or NCRONTAB (6)
	TimeZone string    // of Recurs; empty: UTC
	Duration time.Duration
	bad      string // why the document's line did not read
}

// MaxPauseWindows bounds the windows a circuit names.
const MaxPauseWindows = 5

// window is the window as the jobs' maintenance windows compute openings.
func (p PauseWindow) window() jobs.Window {
	if p.Recurs == "" {
		return jobs.Window{From: p.From, Until: p.From.Add(p.Duration)}
	}
	return jobs.Window{From: time.Unix(0, 0), Until: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), Recurs: p.Recurs, TimeZone: p.TimeZone, Duration: p.Duration}
}

// Check says what is wrong with the window, or "".
func (p PauseWindow) Check() string {
	switch {
	case p.Duration < time.Minute || p.Duration > MaxPause:
		return "a pause window lasts from 1 minute to 7 days"
	case p.Recurs == "" && p.From.IsZero():
		return "give a start (2026-12-08T02:00:00Z) or a schedule (0 2 * * *)"
	}
	if p.Recurs != "" {
		w := p.window()
		if errs := w.Validate(); errs["recurs"] != "" {
			return errs["recurs"]
		}
	}
	return ""
}

// Opening is the opening covering t: when it began and ends.
func (p PauseWindow) Opening(t time.Time) (start, end time.Time, ok bool) {
	if p.Recurs == "" {
		end = p.From.Add(p.Duration)
		return p.From, end, !t.Before(p.From) && t.Before(end)
	}
	next := p.window().Next(t, 1)
	if len(next) == 0 || next[0].After(t) {
		return time.Time{}, time.Time{}, false
	}
	return next[0], next[0].Add(p.Duration), true
}

// Next is the next opening that begins after t.
func (p PauseWindow) Next(t time.Time) (start, end time.Time, ok bool) {
	if p.Recurs == "" {
		return p.From, p.From.Add(p.Duration), p.From.After(t)
	}
	for _, at := range p.window().Next(t, 2) {
		if at.After(t) {
			return at, at.Add(p.Duration), true
		}
	}
	return time.Time{}, time.Time{}, false
}

// String is the window as its form and documents spell it:
// "0 2 * * * for 1h in Europe/Paris" or "2026-12-08T02:00:00Z for 1h".
func (p PauseWindow) String() string {
	if p.Recurs == "" {
		return p.From.UTC().Format(time.RFC3339) + " for " + spoken.Duration(p.Duration)
	}
	s := p.Recurs + " for " + spoken.Duration(p.Duration)
	if p.TimeZone != "" && p.TimeZone != "UTC" {
		s += " in " + p.TimeZone
	}
	return s
}

// ParsePauseWindow reads String's form. What it read is kept (at most
// maxParsedWindows), so a circuit row decoded on every tick costs a
// lookup, not a parse and its checks.
func ParsePauseWindow(s string) (PauseWindow, error) {
	if len(s) > maxPauseWindowLen {
		return PauseWindow{}, fmt.Errorf("%q: a pause window is at most %d characters", clip(s, 80), maxPauseWindowLen)
	}
	parsedWindows.mu.Lock()
	w, ok := parsedWindows.m[s]
	parsedWindows.mu.Unlock()
	if ok {
		return w.p, w.err
	}
	p, err := parsePauseWindow(s)
	parsedWindows.mu.Lock()
	if len(parsedWindows.m) >= maxParsedWindows {
		clear(parsedWindows.m)
	}
	parsedWindows.m[s] = parsedWindow{p, err}
	parsedWindows.mu.Unlock()
	return p, err
}

type parsedWindow struct {
	p   PauseWindow
	err error
}

// maxParsedWindows bounds what is kept (4,096 of at most
// maxPauseWindowLen bytes: under 2 MB).
const maxParsedWindows = 4096

// maxPauseWindowLen bounds a window's line: a schedule, its length and
// its zone.
const maxPauseWindowLen = 400

var parsedWindows = struct {
	mu sync.Mutex
	m  map[string]parsedWindow
}{m: map[string]parsedWindow{}}

func parsePauseWindow(s string) (PauseWindow, error) {
	head, rest, ok := strings.Cut(strings.TrimSpace(s), " for ")
	if !ok {
		return PauseWindow{}, fmt.Errorf("%q: say when and for how long, such as \"0 2 * * * for 1h in Europe/Paris\" or \"2026-12-08T02:00:00Z for 1h\"", clip(s, 80))
	}
	length, zone, _ := strings.Cut(strings.TrimSpace(rest), " in ")
	d, err := time.ParseDuration(strings.TrimSpace(length))
	if err != nil {
		return PauseWindow{}, fmt.Errorf("%q: %q is not a duration such as 1h or 90m", clip(s, 80), clip(length, 20))
	}
	p := PauseWindow{Duration: d, TimeZone: strings.TrimSpace(zone)}
	head = strings.TrimSpace(head)
	if t, err := time.Parse(time.RFC3339, head); err == nil {
		p.From = t
	} else {
		p.Recurs = head
	}
	if msg := p.Check(); msg != "" {
		return PauseWindow{}, fmt.Errorf("%q: %s", clip(s, 80), msg)
	}
	return p, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// PauseDue is the pause window that opens on the closed circuit c at
// now, and when it ends: an opening the circuit has not changed since
// (a person who resumed early, or a trip, is left alone).
func PauseDue(c Circuit, now time.Time) (PauseWindow, time.Time, bool) {
	if c.State != Closed || c.Shadow {
		return PauseWindow{}, time.Time{}, false
	}
	for _, p := range c.PauseWindows {
		if start, end, ok := p.Opening(now); ok && c.ChangedAt.Before(start) && end.Sub(now) >= time.Second {
			return p, end, true
		}
	}
	return PauseWindow{}, time.Time{}, false
}

// NextPause is the circuit's next pause window's opening after now.
func NextPause(c Circuit, now time.Time) (PauseWindow, time.Time, time.Time, bool) {
	return NextOpening(c.PauseWindows, now)
}

// NextOpening is the first opening of ws after now.
func NextOpening(ws []PauseWindow, now time.Time) (PauseWindow, time.Time, time.Time, bool) {
	var best PauseWindow
	var bestStart, bestEnd time.Time
	for _, p := range ws {
		if start, end, ok := p.Next(now); ok && (bestStart.IsZero() || start.Before(bestStart)) {
			best, bestStart, bestEnd = p, start, end
		}
	}
	return best, bestStart, bestEnd, !bestStart.IsZero()
}

// PauseWindowActor is who the flip log says paused a circuit for a window.
const PauseWindowActor = "pause window"

// ParsePauseWindows reads windows one a line, or says what is wrong with
// the first that does not read.
func ParsePauseWindows(lines []string) ([]PauseWindow, error) {
	var out []PauseWindow
	for _, l := range lines {
		p, err := ParsePauseWindow(l)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ExpiringPause is a pause window of set as long as its hub keeps events
// or longer: the events waiting when it opens would expire before it
// ends.
func ExpiringPause(set Settings) (PauseWindow, bool) {
	for _, p := range set.PauseWindows {
		if set.HubRetention > 0 && p.Duration >= set.HubRetention {
			return p, true
		}
	}
	return PauseWindow{}, false
}
