package trigger

import (
	"regexp"
	"strings"
	"testing"
)

// The rule as a regular expression, which ValidName's loop must match.
var nameRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,127}$`)

func FuzzValidNameIsTheRule(f *testing.F) {
	for _, s := range []string{"", "A", "ProcessOrders", "9x", "a-b_c9", "Functions.X", "é", strings.Repeat("a", 128), strings.Repeat("a", 129), "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidName(s) != nameRule.MatchString(s) {
			t.Fatalf("ValidName(%q) = %v, the rule says %v", s, ValidName(s), !ValidName(s))
		}
	})
}
