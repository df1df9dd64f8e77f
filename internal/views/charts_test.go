package views_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/views"
)

// A chart says its numbers: the top of its scale and zero, each bar's
// value on hover, the threshold as a labelled line, and every value in its
// text alternative, so equal bars still read as what they are.
func TestBarsSayTheirNumbers(t *testing.T) {
	var b bytes.Buffer
	if err := views.Bars([]int{20, 20, 20}, 0, "older", "latest", "run durations in seconds").Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{`data-testid="chart-max">20<`, `>0</text>`, `<title>20</title>`, `<desc>older to latest: 20, 20, 20</desc>`,
		`aria-label="run durations in seconds: highest 20, total 60"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %s:\n%s", want, svg)
		}
	}
	b.Reset()
	if err := views.Bars([]int{3, 120}, 100, "−30s", "now", "failures").Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if svg := b.String(); !strings.Contains(svg, `class="threshold"`) || !strings.Contains(svg, ">threshold 100<") || !strings.Contains(svg, `class="bar over"`) {
		t.Errorf("the threshold is not drawn and named, or the bar over it not marked:\n%s", svg)
	}
}
