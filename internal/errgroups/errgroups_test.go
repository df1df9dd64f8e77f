package errgroups

import (
	"testing"
	"time"
)

func TestFingerprintFoldsWhatVaries(t *testing.T) {
	same := [][2]string{
		{"Timeout after 30 s reading 'orders/42'", "Timeout after 12 s reading 'orders/7'"},
		{"Order 0c6bd5d3-3f3a-4c1b-9a4e-7d0f6f9e2b11 not found", "Order 9f1e0a77-1b2c-4d5e-8f90-a1b2c3d4e5f6 not found"},
		{`Could not open /var/data/orders-1.json`, `Could not open /var/data/orders-22.json`},
		{`Write to C:\home\site\out\a.txt failed`, `Write to C:\home\site\out\b.txt failed`},
		{"GET https://store.example.com/orders/1 answered 503", "GET https://store.example.com/orders/2 answered 503"},
		{"hash 3f2a9c1be0d4 mismatch", "hash 77aa00ff11bb mismatch"},
		{"  many   spaces\n", "many spaces"},
	}
	for _, p := range same {
		if a, b := Fingerprint(p[0]), Fingerprint(p[1]); a != b {
			t.Errorf("%q → %q and %q → %q: want one group", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{"Timeout reading orders", "Connection refused reading orders"},
		{"SqlException: deadlock", "SqlException: login failed"},
	}
	for _, p := range differ {
		if Fingerprint(p[0]) == Fingerprint(p[1]) {
			t.Errorf("%q and %q fold to one group", p[0], p[1])
		}
	}
}

func TestOfGroupsMostFirstAndBoundsThem(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	samples := []Sample{
		{Text: "Timeout after 30 s", At: at, Count: 5, Source: "vm-1", Trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{Text: "Timeout after 12 s", At: at.Add(time.Second), Count: 3, Source: "vm-2", Trace: "00-0AF7651916CD43DD8448EB211C80319D-B7AD6B7169203331-01"}, // not W3C: upper case
		{Text: "Connection refused", At: at, Count: 2, Source: "vm-1"},
		{Text: "", At: at, Count: 1},
		{Text: "Disk full", At: at, Count: 1},
	}
	groups, other := Of(samples, 2)
	if len(groups) != 2 || other != 2 {
		t.Fatalf("%d groups, other %d; want 2 and 2 (no text and disk full left out)", len(groups), other)
	}
	g := groups[0]
	if g.Count != 8 || g.Example != "Timeout after 12 s" || !g.First.Equal(at) || !g.Last.Equal(at.Add(time.Second)) ||
		len(g.Sources) != 2 || len(g.Traces) != 1 || g.Traces[0] != "0af7651916cd43dd8448eb211c80319c" || len(g.Spans) != 1 || g.Spans[0] != "b7ad6b7169203331" {
		t.Errorf("timeouts: %+v", g)
	}
	if groups[1].Count != 2 || groups[1].Example != "Connection refused" {
		t.Errorf("second: %+v", groups[1])
	}
	if all, _ := Of(samples, -1); len(all) != 4 || all[3].Fingerprint != NoText && all[2].Fingerprint != NoText {
		t.Errorf("unbounded: %+v", all)
	}
}
