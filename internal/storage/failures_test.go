package storage_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A writer whose clock runs 60 s ahead writes a row for a second still to
// come. Under a stream of other writes, the incremental reads that follow
// ask only for rows changed since the newest seen, and no longer return
// it; it must still be returned once its second enters the window.
func TestARowAheadOfTheClockIsKeptUntilItsSecondComes(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	storage.SetIncrementalMargin(st.Failures, 50*time.Millisecond)
	now := time.Now().UTC().Truncate(time.Second)
	ahead := now.Add(60 * time.Second)
	if _, _, err := st.Failures.Window(t.Context(), now.Add(-30*time.Second), now); err != nil {
		t.Fatal(err) // the first, full read
	}
	if err := st.Failures.Record(t.Context(), "skewed", []storage.Report{{App: "orders", Function: "Process", Second: ahead, Count: 7}}); err != nil {
		t.Fatal(err)
	}
	// Background load from another writer, read incrementally, for well
	// past the margin: the skewed row's Timestamp falls behind.
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if err := st.Failures.Record(t.Context(), "busy", []storage.Report{{App: "orders", Function: "Other", Second: now, Count: i + 1}}); err != nil {
			t.Fatal(err)
		}
		rows, _, err := st.Failures.Window(t.Context(), now.Add(-30*time.Second), now)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Second.Equal(ahead) {
				t.Fatal("a row for a second still to come was returned early")
			}
		}
	}
	rows, _, err := st.Failures.Window(t.Context(), ahead.Add(-30*time.Second), ahead)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows {
		found = found || (r.Second.Equal(ahead) && r.Count == 7)
	}
	if !found {
		t.Errorf("the skewed writer's 7 failures were lost: %d rows returned when their second came", len(rows))
	}
}
