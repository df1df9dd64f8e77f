package pushback_test

import (
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/pushback"
)

func TestWhatLooksLikeADownstreamPushingBack(t *testing.T) {
	for text, want := range map[string]bool{
		"Response status code does not indicate success: TooManyRequests (429); Substatus: 3200": true,
		"HTTP 429 Too Many Requests":                              true,
		"upstream answered 503 Service Unavailable":               true,
		"The server is busy. ServerBusy":                          true,
		"Server Busy":                                             true,
		"Request rate is large. More Request Units may be needed": true,
		"rate limit exceeded":                                     true,
		"request was throttled":                                   true,
		"order 4291 failed validation":                            false,
		"timeout after 5030 ms":                                   false,
		"NullReferenceException: Object reference not set":        false,
		"": false,
	} {
		if got := pushback.Says(text); got != want {
			t.Errorf("Says(%q) = %v, want %v", text, got, want)
		}
	}
}

func FuzzSays(f *testing.F) {
	f.Add("429")
	f.Add("order 4291")
	f.Fuzz(func(t *testing.T, s string) {
		_ = pushback.Says(s) // never panics, whatever the text
		if len(s) > 2048 && pushback.Says(s) != pushback.Says(s[:2048]) {
			t.Error("read past the first 2 kB")
		}
	})
}

func TestACircuitsOwnWordsArePushingBackToo(t *testing.T) {
	for _, tc := range []struct {
		word, want string
	}{
		{"quota exceeded", "quotaexceeded"},
		{"Quota-Exceeded!", "quotaexceeded"},
		{"E42", ""}, // fewer than three letters: it would match nearly anything
		{strings.Repeat("a", pushback.MaxWordBytes+1), ""},
	} {
		if got := pushback.Word(tc.word); got != tc.want {
			t.Errorf("Word(%q) = %q; want %q", tc.word, got, tc.want)
		}
	}
	words := []string{pushback.Word("quota exceeded")}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Quota exceeded for tenant 7", true},
		{"QUOTA_EXCEEDED", true},
		{"Object reference not set to an instance of an object", false},
		{"TooManyRequests", true}, // the built-in words still count
	} {
		if got := pushback.SaysWith(tc.text, words); got != tc.want {
			t.Errorf("SaysWith(%q) = %v; want %v", tc.text, got, tc.want)
		}
	}
	if pushback.Says("Quota exceeded for tenant 7") {
		t.Error("without the circuit's words, a quota is not pushing back")
	}
}
