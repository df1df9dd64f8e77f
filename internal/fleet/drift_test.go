package fleet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// TestDriftOfSaysWhatChangedInAzure: unguarded event-driven functions,
// timers without a job, circuits and jobs whose function is gone, and
// circuits whose trigger changed hub, queue or kind.
func TestDriftOfSaysWhatChangedInAzure(t *testing.T) {
	fns := []Function{
		fn("Hubs", EventHubs, Detail{Name: "eventHubName", Value: "orders-v2"}),
		fn("Same", EventHubs, Detail{Name: "eventHubName", Value: "payments"}, Detail{Name: "consumerGroup", Value: "fusebox"}),
		fn("Q", Queue, Detail{Name: "queueName", Value: "work-v2"}),
		fn("NowHTTP", HTTP), fn("Bus", ServiceBus), fn("Tick", Timer), fn("Timed", Timer), fn("Web", HTTP),
		{Name: "Odd", Problem: "unreadable"},
	}
	cs := []circuit.Circuit{
		{Function: "Hubs", Settings: circuit.Settings{EventHub: "orders"}}, {Function: "Same", Settings: circuit.Settings{EventHub: "ns/payments/fusebox"}}, {Function: "Q", Settings: circuit.Settings{Queue: "work"}},
		{Function: "NowHTTP"}, {Function: "Retired"},
	}
	d := DriftOf(fns, cs, []string{"Timed", "OldTimer", ""})
	if !slices.Equal(d.Unguarded, []string{"Bus"}) || !slices.Equal(d.Untimed, []string{"Tick"}) ||
		!slices.Equal(d.GoneCircuits, []string{"Retired"}) || !slices.Equal(d.GoneJobs, []string{"OldTimer"}) {
		t.Errorf("drift %+v", d)
	}
	want := []Change{{"Hubs", "hub orders", "hub orders-v2"}, {"NowHTTP", "an event-driven trigger", "a httpTrigger"}, {"Q", "queue work", "queue work-v2"}}
	if !slices.Equal(d.Changed, want) {
		t.Errorf("changed %+v, want %+v", d.Changed, want)
	}
	if DriftOf(nil, nil, nil).Any() {
		t.Error("nothing drifted, yet Any")
	}
}

// TestDriftWatchHoldsNoAppUpForAnother: an app whose ARM listing hangs
// ends at its own deadline, the others are checked meanwhile, a deleted
// site is said to be gone, and apps not switched through ARM are skipped.
func TestDriftWatchHoldsNoAppUpForAnother(t *testing.T) {
	apps := []circuit.App{{ID: "hangs", Switch: circuit.SwitchARM}, {ID: "gone", Switch: circuit.SwitchARM}, {ID: "ok", Switch: circuit.SwitchARM}, {ID: "local", Switch: circuit.SwitchLocal}}
	w := &DriftWatch{
		Apps:         listOf(apps),
		Circuits:     listOf([]circuit.Circuit{{AppID: "ok", Function: "Guarded"}}),
		JobFunctions: func(context.Context) (map[string][]string, error) { return nil, nil },
		Functions: func(ctx context.Context, app circuit.App) ([]Function, error) {
			switch app.ID {
			case "hangs":
				<-ctx.Done()
				return nil, fmt.Errorf("ARM did not answer in time")
			case "gone":
				return nil, fmt.Errorf("ARM has no site: %w", ErrGone)
			case "local":
				t.Error("an app switched locally was asked of ARM")
			}
			return []Function{fn("Guarded", EventHubs), fn("Open", Kafka)}, nil
		},
		PerApp: 200 * time.Millisecond, Now: time.Now,
	}
	start := time.Now()
	w.Check(t.Context())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a check took %s: the hanging app held the rest up", took)
	}
	if d, _ := w.Of("ok"); !slices.Equal(d.Unguarded, []string{"Open"}) || d.Problem != "" {
		t.Errorf("ok: %+v", d)
	}
	if d, _ := w.Of("gone"); !d.Gone {
		t.Errorf("gone: %+v", d)
	}
	if d, _ := w.Of("hangs"); d.Problem == "" {
		t.Errorf("hangs: %+v", d)
	}
	if _, ok := w.Of("local"); ok {
		t.Error("a local app was checked")
	}
	if got := w.Unguarded(); len(got) != 1 || got["ok"] != 1 {
		t.Errorf("unguarded %v: want only checked apps, ok with 1", got)
	}
}

type list[T any] []T

func (l list[T]) List(context.Context) ([]T, error) { return l, nil }

func listOf[T any](xs []T) list[T] { return list[T](xs) }
