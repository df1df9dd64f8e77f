package faulttest_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// TestAStormAcrossThreeInstancesKeepsTheGuardrail: the demo app allows one
// more circuit off than the two it has off; six of its circuits cross
// their thresholds at once, each reported to one of three real instances,
// whose evaluators all tick on the real clock. Each circuit's storm is
// decided (a trip or a trip held by the guardrail), and no more than one
// of them is switched off: never more than the app allows, however the
// instances' reads and writes interleaved. The window between one
// instance's read and another's write is narrow, and this storm passed
// before the guard row too; TestTwoInstancesCannotTripPastTheGuardrail
// (internal/storage) forces that interleaving. This one shows the held
// trips of real instances on the real clock.
func TestAStormAcrossThreeInstancesKeepsTheGuardrail(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	app, err := r.st.Apps.Get(t.Context(), demo.AppID)
	if err != nil {
		t.Fatal(err)
	}
	app.Guardrail = circuit.Guardrail{MaxOff: 3} // SyncInventory and ImportPrices are off already
	if err := r.st.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	var storm []string
	for i := range 6 {
		fn := fmt.Sprintf("Storm%d", i+1)
		storm = append(storm, fn)
		if err := r.st.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: fn, Settings: circuit.Settings{Threshold: 5, Window: time.Minute}, State: circuit.Closed, ChangedAt: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	instances := r.start(3)
	var wg sync.WaitGroup
	for i, fn := range storm {
		wg.Go(func() { r.report(t, instances[i%3], fn, 10) })
	}
	wg.Wait()
	for _, fn := range storm {
		r.waitCircuit(fn, "decided (tripped or held, and applied)", func(c circuit.Circuit) bool { return c.Episode >= 1 && !c.Pending() }, 30*time.Second)
	}
	all, err := r.st.Circuits.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	off, tripped, held := 0, 0, 0
	for _, c := range all {
		if c.AppID != demo.AppID {
			continue
		}
		if c.State.TriggerOff() && !c.Shadow {
			off++
		}
		for _, fn := range storm {
			if c.Function == fn && c.State.TriggerOff() {
				tripped++
			}
			if c.Function == fn && c.Held {
				held++
			}
		}
	}
	if off > 3 || tripped != 1 || held != len(storm)-1 {
		t.Errorf("after the storm: %d of the app's circuits off (at most 3), %d storm circuits tripped and %d held; want 1 tripped and %d held", off, tripped, held, len(storm)-1)
	}
}
