package web

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/storage"
)

// FuzzIngestDecoder checks that no body makes the failure-report decoder
// panic, that every item is either kept or refused by index, and that what
// is kept belongs to the key's app, is in range and in time.
func FuzzIngestDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"failures":[{"function":"ProcessOrders","count":3}]}`,
		`{"failures":[{"function":"A","at":"2026-12-01T12:00:00Z","count":1,"successes":9,"error":"boom"}]}`,
		`{"failures":[{"function":"A","successes":5}]}`,
		`{"failures":[1,"x",null,{"function":7},{"count":"many"},{"function":"A","count":-1}]}`,
		`{"failures":[{"app":"other","function":"A"}]}`,
		`{"failures":[{"function":"A","at":"yesterday"}]}`,
		`{"failures":`, `[]`, `null`, ``, `{"failures":[{"function":"A","count":1e99}]}`,
	} {
		f.Add(seed)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := decodeIngest(strings.NewReader(body))
		if err != nil {
			return
		}
		reports, index, resp := validItems(req, "orders-demo", now)
		if len(index) != len(reports) {
			t.Fatalf("%d reports, %d indexes", len(reports), len(index))
		}
		if resp.Accepted != len(reports) || resp.Accepted+len(resp.Rejected) != len(req.Failures) {
			t.Fatalf("%d items: %d kept, %d refused", len(req.Failures), resp.Accepted, len(resp.Rejected))
		}
		for _, r := range reports {
			switch {
			case r.App != "orders-demo":
				t.Fatalf("kept a report for app %q", r.App)
			case r.Count < 0 || r.Count > 100_000 || r.Successes < 0 || r.Successes > 1_000_000 || r.Count+r.Successes == 0:
				t.Fatalf("kept counts %d/%d", r.Count, r.Successes)
			case r.Second.Before(now.Add(-24*time.Hour)) || r.Second.After(now.Add(storage.MaxSkew)):
				t.Fatalf("kept time %s", r.Second)
			}
		}
	})
}
