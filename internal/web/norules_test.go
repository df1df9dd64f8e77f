package web

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The web layer asks the access policy (internal/access) and holds no
// rule of its own: no handler compares roles or reads a principal's
// teams. Routes name the role they need (routes.go); the rest asks.
func TestTheWebLayerHoldsNoAccessRule(t *testing.T) {
	rule := regexp.MustCompile(`\.Allows\(|\.TeamsWith\(|\bp\.Teams\[|\bp\.Role\s*(==|!=|>|<)|\.On\([a-zA-Z]|\.Top\(\)\.Allows|auth\.Role(Viewer|Operator|Admin)`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "routes.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if rule.MatchString(line) && !strings.Contains(line, "messagesHeld(c, auth.Role") {
				t.Errorf("%s:%d decides access itself; ask internal/access instead:\n\t%s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
