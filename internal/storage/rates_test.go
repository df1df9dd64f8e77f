package storage_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

func TestRollupAddsUpEachMinutePerCircuitAndCanBeRedone(t *testing.T) {
	svc, _ := testenv.Storage(t)
	for _, name := range []string{storage.TableFailures, storage.TableRates} {
		if err := svc.CreateTable(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	st := storage.New(svc)
	minute := time.Date(2026, 11, 30, 9, 41, 0, 0, time.UTC)
	record := func(writer string, at time.Time, fn string, n int) {
		t.Helper()
		if err := st.Failures.Record(t.Context(), writer, []storage.Report{{App: "orders", Function: fn, Second: at, Count: n}}); err != nil {
			t.Fatal(err)
		}
	}
	record("a", minute.Add(5*time.Second), "Process", 3)
	record("b", minute.Add(59*time.Second), "Process", 4)
	record("a", minute.Add(20*time.Second), "Sync", 1)
	record("a", minute.Add(60*time.Second), "Process", 100) // the next minute

	if n, err := st.Rates.Rollup(t.Context(), st.Failures, minute.Add(30*time.Second)); err != nil || n != 2 {
		t.Fatalf("Rollup = %d, %v; want 2 circuits", n, err)
	}
	record("c", minute.Add(10*time.Second), "Process", 2) // a late row
	if _, err := st.Rates.Rollup(t.Context(), st.Failures, minute); err != nil {
		t.Fatal(err)
	}
	got, err := st.Rates.Of(t.Context(), "orders", "Process", minute.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Count != 9 || !got[0].Minute.Equal(minute) || got[0].Circuit != "orders/Process" {
		t.Errorf("Process rates = %+v, want one minute of 9", got)
	}
	all, err := st.Rates.Since(t.Context(), minute)
	if err != nil || len(all) != 2 {
		t.Errorf("Since = %+v (err %v), want Process and Sync", all, err)
	}
	if n, err := st.Rates.DeleteBefore(t.Context(), minute.Add(time.Minute)); err != nil || n != 2 {
		t.Errorf("DeleteBefore removed %d (err %v), want 2", n, err)
	}
}
