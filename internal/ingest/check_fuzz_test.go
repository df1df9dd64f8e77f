package ingest

import (
	"testing"
	"time"
)

// FuzzCheck checks that every item is either kept or refused by index, and
// that what is kept belongs to the key's app, is in range and in time.
func FuzzCheck(f *testing.F) {
	f.Add("orders-demo", "ProcessOrders", 3, false, 0, false, int64(0), "boom")
	f.Add("", "A", 0, true, 9, true, int64(-3600), "")
	f.Add("other", "A", 1, true, 0, false, int64(0), "")
	f.Add("", "9bad", -1, true, -1, true, int64(90000), "")
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, app, function string, count int, countSet bool, successes int, successesSet bool, offset int64, sample string) {
		it := Item{App: app, Function: function, Sample: sample}
		if countSet {
			it.Count = &count
		}
		if successesSet {
			it.Successes = &successes
		}
		if offset != 0 {
			it.At = now.Add(time.Duration(offset) * time.Second)
		}
		c := check(Batch{AppID: "orders-demo", Items: []Item{it, {Problem: "unreadable"}}}, now)
		reports, index, res := c.reports, c.index, c.res
		if len(index) != len(reports) || res.Accepted != len(reports) || res.Accepted+len(res.Rejected) != 2 {
			t.Fatalf("2 items: %d kept, %d refused, %d indexes", res.Accepted, len(res.Rejected), len(index))
		}
		for _, r := range reports {
			switch {
			case r.App != "orders-demo":
				t.Fatalf("kept a report for app %q", r.App)
			case r.Count < 0 || r.Count > MaxCount || r.Successes < 0 || r.Successes > MaxSuccesses || r.Count+r.Successes == 0:
				t.Fatalf("kept counts %d/%d", r.Count, r.Successes)
			case r.Second.Before(now.Add(-MaxAge)) || r.Second.After(now.Add(MaxSkew)):
				t.Fatalf("kept time %s", r.Second)
			}
		}
	})
}
