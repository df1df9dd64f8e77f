package fleet_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
)

type apps []circuit.App

func (a apps) List(context.Context) ([]circuit.App, error) { return a, nil }

// A page within five minutes of the last survey costs no ARM call; an older
// one surveys again, and while that survey is slow, other readers are shown
// the last one instead of waiting for it.
func TestFinderSurveysAgainOnlyWhenOld(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	release, started := make(chan struct{}), make(chan struct{})
	f := &fleet.Finder{
		Apps: apps{{SubscriptionID: "s", ResourceGroup: "rg", Site: "a"}},
		Now:  func() time.Time { return now },
		Survey: func(ctx context.Context, subs []string) fleet.Survey {
			if calls.Add(1) == 2 {
				close(started)
				<-release
			}
			return fleet.Survey{Sites: []fleet.Site{{Subscription: "s", ResourceGroup: "rg", Name: "a"}, {Subscription: "s", ResourceGroup: "rg", Name: "b"}}}
		},
	}
	s, at, err := f.Latest(t.Context())
	if err != nil || calls.Load() != 1 || !at.Equal(now) || !s.Sites[0].Guarded || s.Unguarded() != 1 {
		t.Fatalf("first: %+v at %s, %d calls, %v", s, at, calls.Load(), err)
	}
	now = now.Add(4 * time.Minute)
	if _, _, _ = f.Latest(t.Context()); calls.Load() != 1 {
		t.Fatalf("a survey four minutes old was taken again (%d calls)", calls.Load())
	}
	now = now.Add(2 * time.Minute)
	done := make(chan struct{})
	go func() { f.Latest(context.Background()); close(done) }()
	<-started
	_, at, _ = f.Latest(t.Context())
	if !at.Equal(now.Add(-6 * time.Minute)) {
		t.Errorf("a reader during a slow survey got one taken at %s, want the last (%s)", at, now.Add(-6*time.Minute))
	}
	close(release)
	<-done
	if _, at, _ = f.Latest(t.Context()); !at.Equal(now) || calls.Load() != 2 {
		t.Errorf("after the survey: taken at %s, %d calls", at, calls.Load())
	}
}
