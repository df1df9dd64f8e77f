package storage_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Reseeding a circuit back to an earlier episode (make run on old data)
// clears its flip log, so its next transition does not collide with a flip
// of the same episode number from before.
func TestPutBackToAnEarlierEpisodeLetsItTransitionAgain(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableCircuits); err != nil {
		t.Fatal(err)
	}
	cs := storage.New(svc).Circuits
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	seed := circuit.Circuit{AppID: "orders", Function: "Process", Threshold: 100, Window: 30 * time.Second, State: circuit.Closed, ChangedAt: t0}
	trip := func() error {
		c, err := cs.Get(t.Context(), "orders", "Process")
		if err != nil {
			t.Fatal(err)
		}
		next, fl, err := circuit.Trip(c, "ops", "by hand", circuit.Counts{}, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return cs.Transition(t.Context(), lease.Fence{}, next, fl)
	}
	if err := cs.Put(t.Context(), seed); err != nil {
		t.Fatal(err)
	}
	if err := trip(); err != nil {
		t.Fatal(err)
	}
	before, _ := cs.Get(t.Context(), "orders", "Process")
	if err := cs.Put(t.Context(), seed); err != nil { // reseeded: episode 0 again
		t.Fatal(err)
	}
	if err := cs.Put(t.Context(), seed); err != nil { // and again, at the episode it now has
		t.Fatal(err)
	}
	if err := trip(); err != nil {
		t.Fatalf("the trip after a reseed failed: %v", err)
	}
	after, _ := cs.Get(t.Context(), "orders", "Process")
	if after.Episode != 1 || after.Incarnation == before.Incarnation {
		t.Errorf("after the reseed: episode %d, incarnation %q (was %q); want 1 and a new incarnation", after.Episode, after.Incarnation, before.Incarnation)
	}
}
