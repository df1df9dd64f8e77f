package storage_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Sent and failed messages go after 30 days; pending ones stay whatever
// their age, since they are still owed.
func TestOutboxPruneKeepsWhatIsOwed(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableOutbox); err != nil {
		t.Fatal(err)
	}
	o := storage.New(svc).Outbox
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	put := func(kind, state string, age time.Duration) {
		t.Helper()
		at := now.Add(-age)
		m := alerts.Message{ID: alerts.MessageID("orders/Process", 1, kind, "ops@example.com"), Circuit: "orders/Process", Episode: 1, Kind: kind,
			To: "ops@example.com", State: alerts.Pending, NextAttempt: at, CreatedAt: at}
		if err := o.Ensure(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		if state == alerts.Pending {
			return
		}
		due, err := o.Recent(t.Context(), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range due {
			if d.ID == m.ID {
				d.State, d.SentAt = state, at
				if _, err := o.Update(t.Context(), lease.Fence{}, d); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	put("sent-old", alerts.Sent, 31*24*time.Hour)
	put("sent-recent", alerts.Sent, 29*24*time.Hour)
	put("failed-old", alerts.Failed, 31*24*time.Hour)
	put("pending-old", alerts.Pending, 40*24*time.Hour)
	n, err := o.DeleteBefore(t.Context(), now.Add(-storage.OutboxRetention))
	if err != nil {
		t.Fatal(err)
	}
	left, err := o.Recent(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range left {
		kinds = append(kinds, m.Kind)
	}
	sort.Strings(kinds)
	if n != 2 || strings.Join(kinds, ",") != "pending-old,sent-recent" {
		t.Errorf("pruned %d, left %v; want 2 pruned, the pending and the recent one left", n, kinds)
	}
}
