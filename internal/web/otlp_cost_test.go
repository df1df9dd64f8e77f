package web

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// TestExportSlotsBoundEachAppAndTheInstance: an app holds at most its
// share of the slots, another app still gets one, and a slot given back
// is taken by the next export waiting.
func TestExportSlotsBoundEachAppAndTheInstance(t *testing.T) {
	t.Parallel()
	e := newExportSlots(3, 2, 0, 200*time.Millisecond)
	ctx := context.Background()
	a1, err1 := e.take(ctx, "a")
	_, err2 := e.take(ctx, "a")
	if err1 != nil || err2 != nil {
		t.Fatalf("an app's first two exports: %v %v", err1, err2)
	}
	if _, err := e.take(ctx, "a"); httpStatus(err) != http.StatusTooManyRequests {
		t.Fatalf("a third export of the same app: %v, want 429 after the wait", err)
	}
	b1, err := e.take(ctx, "b")
	if err != nil {
		t.Fatalf("another app's export waited on the first app's: %v", err)
	}
	if _, err := e.take(ctx, "c"); httpStatus(err) != http.StatusServiceUnavailable {
		t.Fatalf("a fourth export past the instance's three: %v, want 503 after the wait", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := e.take(ctx, "a")
		got <- err
	}()
	a1()
	if err := <-got; err != nil {
		t.Errorf("the export waiting for a's freed slot: %v", err)
	}
	b1()
}

func httpStatus(err error) int {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	return 0
}

// The reserve: two apps at their share of the slots leave the last ones
// to an app that holds none.
func TestTheReserveKeepsSlotsForAnAppThatHoldsNone(t *testing.T) {
	t.Parallel()
	e := newExportSlots(6, 3, 2, 100*time.Millisecond)
	ctx := context.Background()
	for _, app := range []string{"a", "a", "a", "b"} {
		if _, err := e.take(ctx, app); err != nil {
			t.Fatalf("%s: %v", app, err)
		}
	}
	if _, err := e.take(ctx, "b"); httpStatus(err) != http.StatusTooManyRequests {
		t.Fatalf("b's second slot past the reserve: %v, want 429", err)
	}
	for _, app := range []string{"c", "d"} {
		if _, err := e.take(ctx, app); err != nil {
			t.Errorf("%s, holding none, waited on the reserve: %v", app, err)
		}
	}
}
