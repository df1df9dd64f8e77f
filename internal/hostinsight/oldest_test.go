package hostinsight

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A hub slower than the page's wait is read once: the read the page gave
// up on carries on, and the next view finds its answer.
func TestASlowOldestReadCarriesOnForTheNextView(t *testing.T) {
	var c oldestCache
	var calls atomic.Int32
	release := make(chan struct{})
	arrived := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	slow := func(ctx context.Context) (time.Time, error) {
		calls.Add(1)
		select {
		case <-release:
			return arrived, nil
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	_, err := c.read(ctx, "k", slow)
	cancel()
	if !errors.Is(err, errStillReading) {
		t.Fatalf("the first view got %v; want it told the read goes on", err)
	}
	// A second view while the first read runs joins it rather than
	// asking the hub again.
	if _, err := c.read(ctx, "k", slow); !errors.Is(err, errStillReading) {
		t.Fatalf("the second view got %v; want it told the read goes on", err)
	}
	c.mu.Lock()
	r := c.reading["k"]
	c.mu.Unlock()
	close(release)
	<-r.done
	if got, ok := c.get("k"); !ok || !got.Equal(arrived) {
		t.Errorf("kept %v, %v; want %v", got, ok, arrived)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the hub was asked %d times; want once", n)
	}
}

// Past the bound on reads carried on, a read is the caller's alone.
func TestReadsCarriedOnAreBounded(t *testing.T) {
	var c oldestCache
	block := make(chan struct{})
	defer close(block)
	wait := func(ctx context.Context) (time.Time, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return time.Time{}, errors.New("unanswered")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for i := range oldestReading {
		if _, err := c.read(ctx, string(rune('a'+i%26))+time.Duration(i).String(), wait); !errors.Is(err, errStillReading) {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if _, err := c.read(ctx, "one more", wait); err == nil || errors.Is(err, errStillReading) {
		t.Fatalf("read past the bound got %v; want the caller's own failure", err)
	}
	c.mu.Lock()
	n := len(c.reading)
	c.mu.Unlock()
	if n != oldestReading {
		t.Errorf("%d reads carried on; want %d", n, oldestReading)
	}
}
