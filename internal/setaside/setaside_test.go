package setaside_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fusebox/fusebox/internal/setaside"
)

func TestWhichQueuesHoldSetAsideWork(t *testing.T) {
	parking := map[string]string{"orders-parked": "ProcessOrders", "weird-poison": "Weird"}
	for _, c := range []struct {
		name string
		want setaside.Queue
		ok   bool
	}{
		{"orders-poison", setaside.Queue{Name: "orders-poison", Kind: setaside.Poison, Source: "orders"}, true},
		{"webjobs-blobtrigger-poison", setaside.Queue{Name: "webjobs-blobtrigger-poison", Kind: setaside.BlobPoison}, true},
		{"orders-parked", setaside.Queue{Name: "orders-parked", Kind: setaside.Parking, Function: "ProcessOrders"}, true},
		{"weird-poison", setaside.Queue{Name: "weird-poison", Kind: setaside.Parking, Function: "Weird"}, true}, // the circuit's name wins
		{"orders", setaside.Queue{}, false},
		{"ab-poison", setaside.Queue{}, false},      // "ab" is no queue name: too short
		{"-poison", setaside.Queue{}, false},        // no source
		{"Orders-poison", setaside.Queue{}, false},  // not a queue name
		{"orders--poison", setaside.Queue{}, false}, // double hyphen
		{"orders-poisoned", setaside.Queue{}, false},
	} {
		got, ok := setaside.Classify(c.name, parking)
		if ok != c.ok || got != c.want {
			t.Errorf("Classify(%q) = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestABodyReadsSafely(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		name, raw string
		limit     int
		want      setaside.Body
	}{
		{"base64 of JSON, as the extension writes", b64(`{"order": 42}`), 0, setaside.Body{Text: `{"order": 42}`, Decoded: true}},
		{"plain JSON", `{"order": 42}`, 0, setaside.Body{Text: `{"order": 42}`}},
		{"HTML stays text", `<script>alert(1)</script>`, 0, setaside.Body{Text: `<script>alert(1)</script>`}},
		{"control characters", "a\x1b[31mred\x00b\nc", 0, setaside.Body{Text: "a\uFFFD[31mred\uFFFDb\nc"}},
		{"invalid UTF-8", "ok\xff\xfeend", 0, setaside.Body{Text: "ok\uFFFDend"}},
		{"base64 of bytes that are not text stays as sent", b64("\xff\xfe\x00"), 0, setaside.Body{Text: b64("\xff\xfe\x00")}},
		{"cut", strings.Repeat("é", 10), 4, setaside.Body{Text: "éééé", Cut: true}},
		{"empty", "", 0, setaside.Body{}},
	} {
		if got := setaside.Read(c.raw, c.limit); got != c.want {
			t.Errorf("%s: Read = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func FuzzReadIsSafeText(f *testing.F) {
	f.Add("eyJhIjoxfQ==", 300)
	f.Add("\x00\xff<b>", 3)
	f.Fuzz(func(t *testing.T, raw string, limit int) {
		limit = limit % 1000
		if limit < 0 {
			limit = -limit
		}
		b := setaside.Read(raw, limit)
		if !utf8.ValidString(b.Text) {
			t.Fatalf("not UTF-8: %q", b.Text)
		}
		if limit > 0 && utf8.RuneCountInString(b.Text) > limit {
			t.Fatalf("%d runes, limit %d", utf8.RuneCountInString(b.Text), limit)
		}
		for _, r := range b.Text {
			if r < 0x20 && r != '\n' && r != '\t' && r != '\r' {
				t.Fatalf("control character %U in %q", r, b.Text)
			}
		}
	})
}
