package appservice_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches"
	"github.com/fusebox/fusebox/internal/testenv"
)

// After the switch writes, the circuit is "not yet confirmed" until the
// host itself reports the function disabled (after the restart), then
// "confirmed"; a host that never follows is "contradicted" after the
// deadline — and confirmed after all if it follows later.
func TestTheHostConfirmsTheTrigger(t *testing.T) {
	svc, _ := testenv.Storage(t)
	for _, name := range []string{storage.TableApps, storage.TableCircuits, storage.TableFailures, storage.TableStatus} {
		if err := svc.CreateTable(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	st := storage.New(svc)
	s := newSite(map[string]string{"KEEP": "1"})
	s.restart()
	sw := newSwitch(t, s)
	app := circuit.App{ID: "orders", SubscriptionID: "00000000-0000-0000-0000-000000000000", ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}
	if err := st.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	put := func(fn string) {
		t.Helper()
		c := circuit.Circuit{AppID: "orders", Function: fn, Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Open, Episode: 1, ChangedAt: clk.Now(), Reason: "101 failures", Actuation: circuit.Actuation{AppliedEpisode: 1, AppliedAt: clk.Now()}}
		if err := st.Circuits.Put(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	put("ProcessOrders")
	if err := sw.Apply(t.Context(), app, map[string]bool{"ProcessOrders": true}); err != nil {
		t.Fatal(err)
	}
	v := circuit.NewVerifier(st.Breaker(), sw, circuit.VerifierSettings{Clock: clk, Deadline: time.Minute})
	fence := lease.Fence{Lease: "circuits/verifier", Generation: 1}
	status := func() string {
		t.Helper()
		if err := v.Pass(t.Context(), fence); err != nil {
			t.Fatal(err)
		}
		c, err := st.Circuits.Get(t.Context(), "orders", "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		return c.TriggerStatus()
	}
	if got := status(); got != "written, not yet confirmed (app restarting)" {
		t.Errorf("before the restart: %q", got)
	}
	clk.Advance(61 * time.Second)
	if got := status(); got != "written, but the host still reports it enabled" {
		t.Errorf("past the deadline, host unchanged: %q", got)
	}
	s.restart()
	if got := status(); got != "trigger off — confirmed 09:01:01 UTC" {
		t.Errorf("after the restart: %q", got)
	}
}

// A circuit is refused for a function the app does not have, and for one
// a [Disable] attribute switches off (its setting would change nothing).
func TestCircuitsForUnswitchableFunctionsAreRefused(t *testing.T) {
	s := newSite(map[string]string{})
	s.restart()
	s.attributeDisabled = map[string]bool{"ImportPrices": true}
	r := switches.Router{ARM: newSwitch(t, s)}
	app := circuit.App{ID: "orders", SubscriptionID: "00000000-0000-0000-0000-000000000000", ResourceGroup: "rg-orders", Site: "func-orders", Switch: circuit.SwitchARM}
	if err := r.CheckFunction(t.Context(), app, "ProcessOrders"); err != nil {
		t.Errorf("ProcessOrders: %v", err)
	}
	if err := r.CheckFunction(t.Context(), app, "ShipParcels"); err == nil || !strings.Contains(err.Error(), "no function \"ShipParcels\"") || !strings.Contains(err.Error(), "ProcessOrders") {
		t.Errorf("ShipParcels: %v, want a refusal naming the functions it has", err)
	}
	if err := r.CheckFunction(t.Context(), app, "ImportPrices"); err == nil || !strings.Contains(err.Error(), "[Disable]") {
		t.Errorf("ImportPrices: %v, want a refusal naming the attribute", err)
	}
	got, err := newSwitch(t, s).Effective(t.Context(), app, []string{"ImportPrices", "Missing"})
	if err != nil || !got["ImportPrices"] || got["Missing"] {
		t.Errorf("Effective = %v, %v", got, err)
	}
}
