// Package pushback reads error texts for a downstream pushing back (HTTP
// 429 and 503, ServerBusy, "Request rate is large"...): what a circuit's
// throttle counts when it counts throttling errors only. It runs for every
// reported failure, so it is bounded and allocates nothing.
package pushback

import "bytes"

// throttledWords are what downstream services say when they push back,
// as lower-case letters with spaces and punctuation dropped: "Too Many
// Requests" and TooManyRequests, Service Bus' ServerBusy and Storage's
// "Server Busy", Cosmos DB's "Request rate is large".
var throttledWords = []string{"toomanyrequests", "serverbusy", "throttl", "ratelimit", "requestrateislarge", "serviceunavailable"}

// Says says whether an error text is a downstream pushing back:
// HTTP 429 or 503 as whole numbers, or one of throttledWords in any case
// and spacing. What a throttle on throttling errors only counts. It runs
// for every reported failure, so it reads at most the first 2 kB, once,
// and allocates nothing.
func Says(text string) bool { return SaysWith(text, nil) }

// MaxWords bounds the words a circuit adds to throttledWords, and
// MaxWordBytes each word as typed.
const (
	MaxWords     = 10
	MaxWordBytes = 64
)

// Word is how a word an operator adds is looked for, as throttledWords
// are: its letters, lower-cased ("Quota exceeded" → "quotaexceeded");
// digits, spaces and punctuation do not count. "" when it has fewer than
// three letters, which would match nearly anything.
func Word(s string) string {
	if len(s) > MaxWordBytes {
		return ""
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		}
	}
	if len(b) < 3 {
		return ""
	}
	return string(b)
}

// SaysWith is Says with more words, each as Word makes it.
func SaysWith(text string, more []string) bool {
	if len(text) > 2048 {
		text = text[:2048] // someone else's text: bounded before it is read
	}
	var buf [2048]byte
	letters := buf[:0]
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= 'a' && c <= 'z':
			letters = append(letters, c)
		case c >= 'A' && c <= 'Z':
			letters = append(letters, c+'a'-'A')
		case (c == '4' || c == '5') && i+3 <= len(text) && (text[i:i+3] == "429" || text[i:i+3] == "503") &&
			(i == 0 || !wordByte(text[i-1])) && (i+3 == len(text) || !wordByte(text[i+3])):
			return true
		}
	}
	for _, w := range throttledWords {
		if bytes.Contains(letters, []byte(w)) {
			return true
		}
	}
	for _, w := range more {
		if w != "" && bytes.Contains(letters, []byte(w)) {
			return true
		}
	}
	return false
}

// wordByte is a byte of a word, as a regular expression's \b sees it.
func wordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
