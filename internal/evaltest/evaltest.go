// Package evaltest builds what a test of the evaluator against a real
// switch needs: the tables it reads and writes on the test's Azurite, and
// an evaluator on a fake clock ticked by hand.
package evaltest

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Store is a fresh store with the evaluator's tables made.
func Store(t *testing.T) *storage.Store {
	t.Helper()
	svc, _ := testenv.Storage(t)
	for _, name := range []string{storage.TableApps, storage.TableCircuits, storage.TableFailures, storage.TableStatus, storage.TableLeases} {
		if err := svc.CreateTable(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	return storage.New(svc)
}

// Clock is the fake clock the tests start at.
func Clock() *clock.Fake { return clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)) }

// Evaluator is an evaluator of st switching through sw, with its claims,
// on settings (its Claims filled in here).
func Evaluator(t *testing.T, st *storage.Store, sw circuit.Switch, settings circuit.EvaluatorSettings) *circuit.Evaluator {
	t.Helper()
	claims, err := lease.NewClaims(st.Leases, "test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings.Claims = claims
	return circuit.NewEvaluator(st.Breaker(), sw, settings)
}

// Tick runs one evaluator tick as the lease's holder and waits for the
// switch calls it started.
func Tick(t *testing.T, eval *circuit.Evaluator) {
	t.Helper()
	if err := eval.Tick(t.Context(), lease.Fence{Lease: "evaluator", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	eval.Wait()
}
