package web

import (
	"strings"
	"testing"
)

// FuzzIngestDecoder checks that no body makes the failure-report decoder
// panic and that each item is read whole or refused with its problem (what
// is then kept is ingest's to check: FuzzCheck there).
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
	f.Fuzz(func(t *testing.T, body string) {
		req, err := decodeIngest(strings.NewReader(body))
		if err != nil {
			return
		}
		for i, raw := range req.Failures {
			it := raw.item()
			if it.Problem != "" && (it.Function != "" || it.Count != nil || it.Successes != nil || !it.At.IsZero()) {
				t.Fatalf("item %d: a problem (%q) with values kept", i, it.Problem)
			}
			if it.Problem == "" && it.At.IsZero() && raw.At.v != "" {
				t.Fatalf("item %d: at %q read as none", i, raw.At.v)
			}
		}
	})
}
