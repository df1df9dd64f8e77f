package storage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

func newCircuits(t *testing.T) (*storage.Circuits, *tablestore.Service) {
	t.Helper()
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableCircuits); err != nil {
		t.Fatal(err)
	}
	return storage.New(svc).Circuits, svc
}

func mustGet(t *testing.T, cs *storage.Circuits, app, function string) circuit.Circuit {
	t.Helper()
	c, err := cs.Get(t.Context(), app, function)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustCreateProcess creates orders/Process in state, at episode, changed at.
func mustCreateProcess(t *testing.T, cs *storage.Circuits, state circuit.State, episode int64, at time.Time) {
	t.Helper()
	c := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: state, Episode: episode, ChangedAt: at}
	if err := cs.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// The switch and the verifier write a circuit's actuation, not its row:
// a trip decided on the circuit as read before them still lands, with no
// read again, and what they wrote is still there after it.
func TestSwitchingAndVerifyingLeaveTheVersionATransitionDependsOn(t *testing.T) {
	cs, _ := newCircuits(t)
	ctx := t.Context()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	mustCreateProcess(t, cs, circuit.Closed, 0, t0)
	decided := mustGet(t, cs, "orders", "Process")
	if decided.Pending() || decided.Actuation.Version == "" {
		t.Fatalf("a new circuit: pending %v, actuation version %q; want applied, with an actuation row", decided.Pending(), decided.Actuation.Version)
	}

	// Every few seconds, meanwhile: confirmation, drift, a reapply and its switch.
	if err := cs.SetConfirmation(ctx, lease.Fence{}, decided, circuit.Confirmed, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := cs.SetDrift(ctx, lease.Fence{}, decided, "someone switched it off", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := cs.Reapply(ctx, decided); err != nil {
		t.Fatal(err)
	}
	if err := cs.MarkApplied(ctx, lease.Fence{Lease: "switch/orders", Generation: 1}, mustGet(t, cs, "orders", "Process"), t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if now := mustGet(t, cs, "orders", "Process"); now.Version != decided.Version {
		t.Fatalf("the circuit's version moved from %q to %q under the switch's and verifier's writes", decided.Version, now.Version)
	}

	reads := cs.CountReads("orders", "Process")
	next, fl, err := circuit.Trip(decided, "ops", "by hand", circuit.Counts{}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Transition(ctx, lease.Fence{}, next, fl); err != nil {
		t.Fatalf("a trip decided before the switch's writes: %v", err)
	}
	if n := reads(); n != 0 {
		t.Errorf("the trip read the circuit's row %d times; want none", n)
	}
	got := mustGet(t, cs, "orders", "Process")
	if got.State != circuit.ForcedOpen || !got.Pending() || got.AppliedEpisode != 0 || !got.AppliedAt.Equal(t0.Add(3*time.Second)) {
		t.Errorf("after the trip: %s, pending %v, applied episode %d at %v; want forced-open, pending, episode 0 applied at %v",
			got.State, got.Pending(), got.AppliedEpisode, got.AppliedAt, t0.Add(3*time.Second))
	}
	if got.Drift != "" {
		t.Errorf("the drift of episode 0 shows on episode 1: %q", got.Drift)
	}
}

// A switch for an older episode than the one recorded is refused: a slow
// call cannot undo a newer one. A circuit deleted and created again does
// not inherit the old one's actuation.
func TestAnActuationBelongsToItsEpisodeAndItsCircuit(t *testing.T) {
	cs, _ := newCircuits(t)
	ctx := t.Context()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	seed := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed, ChangedAt: t0}
	if err := cs.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	closed := mustGet(t, cs, "orders", "Process")
	next, fl, err := circuit.Trip(closed, "ops", "by hand", circuit.Counts{}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Transition(ctx, lease.Fence{}, next, fl); err != nil {
		t.Fatal(err)
	}
	open := mustGet(t, cs, "orders", "Process")
	if err := cs.MarkApplied(ctx, lease.Fence{}, open, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := cs.MarkApplied(ctx, lease.Fence{}, closed, t0.Add(3*time.Minute)); !errors.Is(err, circuit.ErrConflict) {
		t.Errorf("a slow switch of episode 0 after episode 1's: %v; want a conflict", err)
	}
	if err := cs.SetApplyError(ctx, lease.Fence{}, open, "no answer", 1, t0.Add(4*time.Minute)); !errors.Is(err, circuit.ErrConflict) {
		t.Errorf("a switch error for an episode already applied: %v; want a conflict", err)
	}
	if got := mustGet(t, cs, "orders", "Process"); got.Pending() || got.ApplyError != "" {
		t.Fatalf("after the refused writes: pending %v, error %q", got.Pending(), got.ApplyError)
	}

	if err := cs.Delete(ctx, "orders", "Process", mustGet(t, cs, "orders", "Process").Version); err != nil {
		t.Fatal(err)
	}
	if err := cs.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	again := mustGet(t, cs, "orders", "Process")
	if again.Episode != 0 || again.Pending() || !again.AppliedAt.IsZero() {
		t.Errorf("the circuit created again: episode %d, pending %v, applied at %v; want a fresh, applied episode 0", again.Episode, again.Pending(), again.AppliedAt)
	}
}

// An actuation row that does not decode, or whose Lowered record does not
// parse, reads as none (the trigger is set again), is never what stops the
// circuit from being read or listed, and the next switch replaces it.
func TestAnUnreadableActuationIsReplacedByTheNextSwitch(t *testing.T) {
	type inWords struct {
		tablestore.Meta
		AppliedEpisode string // a number, written as words by someone
	}
	type notJSON struct {
		tablestore.Meta
		Incarnation string
		Lowered     string // a record, written as a setting by someone
	}
	key := tablestore.Meta{PartitionKey: "orders", RowKey: "a|Process"}
	for name, bad := range map[string]func(incarnation string) tablestore.Entity{
		"a number in words": func(string) tablestore.Entity { return &inWords{Meta: key, AppliedEpisode: "four"} },
		"a Lowered not JSON": func(inc string) tablestore.Entity {
			return &notJSON{Meta: key, Incarnation: inc, Lowered: "maxEventBatchSize=100"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			cs, svc := newCircuits(t)
			ctx := t.Context()
			t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			mustCreateProcess(t, cs, circuit.Open, 4, t0)
			if err := svc.Table(storage.TableCircuits).Upsert(ctx, bad(mustGet(t, cs, "orders", "Process").Incarnation)); err != nil {
				t.Fatal(err)
			}
			c := mustGet(t, cs, "orders", "Process")
			if !c.Pending() {
				t.Fatalf("with its actuation unreadable, the circuit reads as applied (episode %d)", c.AppliedEpisode)
			}
			if listed, err := cs.List(ctx); err != nil || len(listed) != 1 || listed[0].Function != "Process" || !listed[0].Pending() {
				t.Fatalf("listed with its actuation unreadable: %+v, %v; want the circuit, pending", listed, err)
			}
			if err := cs.MarkApplied(ctx, lease.Fence{}, c, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, cs, "orders", "Process"); got.Pending() || got.AppliedEpisode != 4 || got.Lowered != nil {
				t.Errorf("after the switch: pending %v, applied episode %d, lowered %v; want 4 applied, nothing lowered", got.Pending(), got.AppliedEpisode, got.Lowered)
			}
		})
	}
}

// An actuation row of another incarnation (left by a deleted circuit of
// the same name) is not the circuit's: read or listed, none of what it
// says is, and the circuit's next switch error replaces it.
func TestALeftoverActuationIsNotTheNewCircuits(t *testing.T) {
	cs, svc := newCircuits(t)
	ctx := t.Context()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	mustCreateProcess(t, cs, circuit.Closed, 0, t0)
	type leftover struct {
		tablestore.Meta
		Incarnation    string
		Episode        int64
		AppliedEpisode int64
		ApplyError     string
		Drift          string
	}
	if err := svc.Table(storage.TableCircuits).Upsert(ctx, &leftover{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "a|Process"},
		Incarnation: "an-older-circuit", AppliedEpisode: 7, ApplyError: "the old circuit's switch failed", Drift: "the old circuit drifted"}); err != nil {
		t.Fatal(err)
	}
	listed, err := cs.List(ctx)
	if err != nil || len(listed) != 1 {
		t.Fatalf("listed: %d circuits, %v; want one", len(listed), err)
	}
	for how, c := range map[string]circuit.Circuit{"read": mustGet(t, cs, "orders", "Process"), "listed": listed[0]} {
		if c.AppliedEpisode != 0 || c.ApplyError != "" || c.Drift != "" || c.Pending() {
			t.Errorf("%s with another circuit's actuation row: applied episode %d, error %q, drift %q, pending %v; want none of it",
				how, c.AppliedEpisode, c.ApplyError, c.Drift, c.Pending())
		}
	}
	next, fl, err := circuit.Trip(mustGet(t, cs, "orders", "Process"), "ops", "by hand", circuit.Counts{}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Transition(ctx, lease.Fence{}, next, fl); err != nil {
		t.Fatal(err)
	}
	if err := cs.SetApplyError(ctx, lease.Fence{}, mustGet(t, cs, "orders", "Process"), "no answer", 1, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, cs, "orders", "Process"); got.ApplyError != "no answer" || got.AppliedEpisode != 0 || !got.Pending() {
		t.Errorf("after its own switch failed: error %q, applied episode %d, pending %v; want its error, nothing applied, pending", got.ApplyError, got.AppliedEpisode, got.Pending())
	}
}

// A throttle that handed every setting back holds an empty record ({}),
// which says "begun, holding nothing". Once the circuit closes and its
// switch is applied, the record is gone, so the next throttle records the
// settings afresh rather than finding one and lowering nothing.
func TestAThrottleThatHandedEverythingBackIsForgottenAtClose(t *testing.T) {
	cs, _ := newCircuits(t)
	ctx := t.Context()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	mustCreateProcess(t, cs, circuit.Throttled, 1, t0)
	was := "100"
	if err := cs.SetLowered(ctx, lease.Fence{}, mustGet(t, cs, "orders", "Process"), "eventHub", map[string]*string{"AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize": &was}); err != nil {
		t.Fatal(err)
	}
	if err := cs.ReleaseLowered(ctx, lease.Fence{}, mustGet(t, cs, "orders", "Process"), map[string]*string{}, "set by hand"); err != nil {
		t.Fatal(err)
	}
	held := mustGet(t, cs, "orders", "Process")
	if held.Lowered == nil || len(held.Lowered) != 0 || held.Released != "set by hand" {
		t.Fatalf("after handing everything back: lowered %v, released %q; want an empty record and why", held.Lowered, held.Released)
	}
	closed := held
	closed.State, closed.Episode, closed.ChangedAt = circuit.Closed, 2, t0.Add(time.Minute)
	if err := cs.Transition(ctx, lease.Fence{}, closed, circuit.Flip{Episode: 2, From: circuit.Throttled, To: circuit.Closed, At: closed.ChangedAt, Actor: "evaluator"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.MarkApplied(ctx, lease.Fence{}, mustGet(t, cs, "orders", "Process"), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, cs, "orders", "Process"); got.Lowered != nil {
		t.Errorf("closed and applied after handing everything back: lowered %v; want no record", got.Lowered)
	}
}
