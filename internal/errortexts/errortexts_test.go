package errortexts

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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

// TestFingerprintsAreRememberedWithinABound: a text folded once is not
// folded again while remembered, what is remembered is what Fingerprint
// says, and the memory holds no more than its bound in bytes however many
// distinct texts pass through it.
func TestFingerprintsAreRememberedWithinABound(t *testing.T) {
	m := memo{max: 64 << 10}
	text := func(i int) string {
		return fmt.Sprintf("Timeout after %d s reading 'orders/%d' from store-%c", i%60, i, 'a'+i%26)
	}
	for i := range 5000 {
		if got, want := m.fingerprint(text(i)), Fingerprint(text(i)); got != want {
			t.Fatalf("remembered %q for %q, want %q", got, text(i), want)
		}
		held := 0
		for _, gen := range []map[string]string{m.cur, m.old} {
			for k, v := range gen {
				held += len(k) + len(v) + entryBytes
			}
		}
		if held > m.max {
			t.Fatalf("after %d texts the memory holds %d bytes, over its bound of %d", i+1, held, m.max)
		}
	}
	last := text(4999)
	if _, ok := m.cur[last]; !ok {
		t.Fatalf("the latest text is not remembered")
	}
	// A remembered text is answered from memory: swap in a wrong answer
	// and it is the one given.
	m.cur[last] = "remembered"
	if got := m.fingerprint(last); got != "remembered" {
		t.Errorf("a remembered text was folded again: %q", got)
	}
	long := strings.Repeat("x", 3*MaxText)
	if got := m.fingerprint(long); got != Fingerprint(long) || len(got) > MaxText {
		t.Errorf("a text over MaxText: %d bytes of fingerprint", len(got))
	}
}

// BenchmarkOf is one grouping of 2,000 distinct texts (a closed circuit's
// rows, read again every 5 s): first folded, then remembered.
func BenchmarkOf(b *testing.B) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	samples := make([]Sample, 2000)
	for i := range samples {
		samples[i] = Sample{Text: fmt.Sprintf("Order %d: store https://store-%d.example.com/orders/%d answered 503 after %d ms (attempt %d of 'sync-%d')", i, i%7, i, 100+i, i%5, i), At: at.Add(time.Duration(i) * time.Second), Count: 1, Source: "vm-1"}
	}
	b.Run("folded", func(b *testing.B) {
		for b.Loop() {
			folded = memo{max: 8 << 20}
			Of(samples, 10)
		}
	})
	b.Run("remembered", func(b *testing.B) {
		Of(samples, 10)
		for b.Loop() {
			Of(samples, 10)
		}
	})
}

// FuzzFingerprint: whatever text a reporter sends, its fingerprint keeps
// no digit (numbers never split a group), is valid UTF-8 when the text is
// (it is cut at a character, never inside one), has its spaces folded,
// grows at most fourfold (a placeholder for each folded piece), and
// folding it again changes nothing.
func FuzzFingerprint(f *testing.F) {
	for _, s := range []string{
		"Timeout after 30 s reading 'orders/42'",
		"Order 0c6bd5d3-3f3a-4c1b-9a4e-7d0f6f9e2b11 not found",
		`Write to C:\home\site\out\a.txt failed`,
		"GET https://store.example.com/orders/1 answered 503",
		"hash 3f2a9c1be0d4 mismatch",
		"  many   spaces\n",
		strings.Repeat("é", MaxText),
		"x" + strings.Repeat("é", MaxText), // cut inside a character
		"‘quoted’ and “double” 1,234.5:6",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fp := Fingerprint(text)
		if strings.ContainsAny(fp, "0123456789") {
			t.Fatalf("%q → %q keeps a digit", text, fp)
		}
		if utf8.ValidString(text) && !utf8.ValidString(fp) {
			t.Fatalf("%q → %q is not valid UTF-8", text, fp)
		}
		if fp != strings.TrimSpace(fp) || strings.Contains(fp, "  ") || strings.ContainsAny(fp, "\t\n\r\f") {
			t.Fatalf("%q → %q: spaces not folded", text, fp)
		}
		if len(fp) > 4*MaxText {
			t.Fatalf("%d bytes → %d", len(text), len(fp))
		}
		if len(fp) <= MaxText {
			if again := Fingerprint(fp); again != fp {
				t.Fatalf("%q → %q → %q: folding again changed it", text, fp, again)
			}
		}
	})
}
