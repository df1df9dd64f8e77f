package setaside_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/setaside"
)

func TestObserveTellsEachEpisodeOnceAndGrowthOncePerEpisode(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	var w setaside.Watch
	look := func(min, count int) []setaside.Change {
		var ch []setaside.Change
		w, ch = setaside.Observe(w, count, t0, t0.Add(time.Duration(min)*time.Minute), 10)
		return ch
	}
	steps := []struct {
		min, count int
		want       []setaside.Change
		episode    int64
	}{
		{0, 0, nil, 0},                           // empty: nothing to tell
		{1, 1, []setaside.Change{"appeared"}, 1}, // the first poison message
		{2, 3, nil, 1},                           // more of the same episode: no second notice
		{3, 11, []setaside.Change{"grew"}, 1},    // 11 more than the hour's low (the empty look)
		{4, 40, nil, 1},                          // growth told once an episode
		{5, 0, nil, 1},                           // sent back: the episode ends
		{6, 2, []setaside.Change{"appeared"}, 2},
	}
	for _, s := range steps {
		got := look(s.min, s.count)
		if !slices.Equal(got, s.want) || w.Episode != s.episode {
			t.Fatalf("minute %d, %d messages: changes %v, episode %d; want %v, episode %d", s.min, s.count, got, w.Episode, s.want, s.episode)
		}
	}
	if g := w.Growth(t0.Add(6 * time.Minute)); g != 2 {
		t.Errorf("growth after emptying and 2 new: %d, want 2 (from the low of 0)", g)
	}
}

func TestObserveAQueueFullOnTheFirstLookIsNews(t *testing.T) {
	now := time.Now()
	w, ch := setaside.Observe(setaside.Watch{}, 500, now.Add(-time.Hour), now, 0)
	if !slices.Equal(ch, []setaside.Change{setaside.Appeared}) || w.Episode != 1 || !w.Since.Equal(now) {
		t.Fatalf("first look at 500 messages: %v, episode %d, since %v", ch, w.Episode, w.Since)
	}
	if w.Growth(now) != 0 {
		t.Errorf("growth on the first look: %d, want 0 (nothing seen before)", w.Growth(now))
	}
}

func TestGrowthForgetsWhatIsOlderThanAnHour(t *testing.T) {
	t0 := time.Now()
	var w setaside.Watch
	for m := 0; m <= 90; m += 5 {
		w, _ = setaside.Observe(w, 200+m, time.Time{}, t0.Add(time.Duration(m)*time.Minute), 1000)
	}
	now := t0.Add(90 * time.Minute)
	if g := w.Growth(now); g != 60 {
		t.Errorf("growth over the last hour of a queue growing 1 a minute: %d, want 60", g)
	}
	if len(w.Samples) > 61 {
		t.Errorf("%d samples kept, want at most one a minute for an hour", len(w.Samples))
	}
	for _, s := range w.Samples {
		if now.Sub(s.At) > setaside.Keep {
			t.Fatalf("sample from %s kept past the hour", now.Sub(s.At))
		}
	}
}

func TestLooksWithinAMinuteKeepTheLow(t *testing.T) {
	t0 := time.Now()
	var w setaside.Watch
	for i, n := range []int{50, 5, 60} {
		w, _ = setaside.Observe(w, n, time.Time{}, t0.Add(time.Duration(i)*10*time.Second), 1000)
	}
	if len(w.Samples) != 1 || w.Samples[0].Count != 5 {
		t.Fatalf("samples %v: want one sample holding the minute's low of 5", w.Samples)
	}
	if g := w.Growth(t0.Add(30 * time.Second)); g != 55 {
		t.Errorf("growth %d, want 55", g)
	}
}

// People are told once an episode that the oldest message expires within
// a day, not before, not once it has, and again after the queue emptied
// and filled.
func TestAnExpiringMessageIsToldOnceAnEpisode(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	held, _ := setaside.Observe(setaside.Watch{}, 3, now.Add(-6*24*time.Hour), now, 0)
	for _, tc := range []struct {
		name    string
		w       setaside.Watch
		expires time.Time
		told    bool
	}{
		{"in two days", held, now.Add(48 * time.Hour), false},
		{"in 23 hours", held, now.Add(23 * time.Hour), true},
		{"never", held, time.Time{}, false},
		{"already gone", held, now.Add(-time.Minute), false},
		{"told already this episode", func() setaside.Watch { w := held; w.ExpiryTold = true; return w }(), now.Add(time.Hour), false},
	} {
		w, ch := setaside.Expiry(tc.w, tc.expires, now)
		if got := len(ch) == 1 && ch[0] == setaside.Expiring; got != tc.told || !w.Expires.Equal(tc.expires) {
			t.Errorf("%s: told %v (%v), expires %s; want told %v", tc.name, got, ch, w.Expires, tc.told)
		}
	}
	w, _ := setaside.Expiry(held, now.Add(time.Hour), now)
	w, _ = setaside.Observe(w, 0, time.Time{}, now.Add(time.Minute), 0)
	w, _ = setaside.Observe(w, 1, now, now.Add(2*time.Minute), 0)
	if _, ch := setaside.Expiry(w, now.Add(3*time.Hour), now.Add(2*time.Minute)); len(ch) != 1 {
		t.Errorf("a new episode's expiring message is not told: %v", ch)
	}
}
