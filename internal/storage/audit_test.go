package storage_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Recent lists the newest entries across months, newest first. It reads
// the current month every time, and a month before it once a while (no
// entry is written into a month gone by): an overview with a quiet month
// read up to eleven earlier months one after the other on every view.
func TestRecentReadsThisMonthEveryTimeAndEarlierMonthsOnce(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableAudit); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	add := func(at time.Time, action string) {
		t.Helper()
		if err := st.Audit.Append(t.Context(), audit.Entry{At: at, Actor: "olivia", Action: action, Target: "orders/Process"}); err != nil {
			t.Fatal(err)
		}
	}
	actions := func() []string {
		t.Helper()
		entries, err := st.Audit.Recent(t.Context(), now, 8)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Action)
		}
		return out
	}
	add(now.AddDate(0, -3, 0), "september")
	add(now.Add(-time.Hour), "december")
	if got := actions(); len(got) != 2 || got[0] != "december" || got[1] != "september" {
		t.Fatalf("recent: %v, want december then september", got)
	}
	// An entry this month shows at once; one written now into September
	// (which no writer does) shows only once September is read again.
	add(now.Add(-time.Minute), "december, later")
	add(now.AddDate(0, -3, 0).Add(time.Hour), "september, later")
	if got := actions(); len(got) != 3 || got[0] != "december, later" || got[2] != "september" {
		t.Errorf("recent: %v, want this month's new entry first and September as first read", got)
	}
}
