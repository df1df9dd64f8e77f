package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
)

func TestFakeSleepWakesOnlyWhenDue(t *testing.T) {
	f := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	woke := make(chan time.Time, 1)
	go func() {
		if err := f.Sleep(ctx, 10*time.Second); err == nil {
			woke <- f.Now()
		}
	}()
	if err := f.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(10*time.Second - time.Nanosecond)
	if f.Waiters() != 1 {
		t.Fatal("woke a nanosecond early")
	}
	f.Advance(time.Nanosecond)
	select {
	case at := <-woke:
		if want := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC); !at.Equal(want) {
			t.Errorf("woke at %v, want %v", at, want)
		}
	case <-ctx.Done():
		t.Fatal("did not wake when due")
	}
}

func TestFakeSleepLeavesWhenContextEnds(t *testing.T) {
	f := clock.NewFake(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Sleep(ctx, time.Hour) }()
	bound, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := f.BlockUntil(bound, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep returned %v, want context.Canceled", err)
	}
	if n := f.Waiters(); n != 0 {
		t.Errorf("%d waiters left after the sleeper left", n)
	}
}
