package views

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

// Charts are drawn as inline SVG by hand: a few hundred bytes each, no
// script, no inline style, so they pass the page's Content Security Policy.

// Sparkline draws counts (oldest first) as a line, scaled to its maximum.
func Sparkline(counts []int, title string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		const width, height = 120.0, 24.0
		peak := 0
		for _, c := range counts {
			peak = max(peak, c)
		}
		var pts strings.Builder
		n := len(counts)
		for i, c := range counts {
			x := 0.0
			if n > 1 {
				x = width * float64(i) / float64(n-1)
			}
			y := height - 1
			if peak > 0 {
				y = height - 1 - (height-2)*float64(c)/float64(peak)
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
		}
		tone := "quiet"
		if peak > 0 {
			tone = "busy"
		}
		_, err := fmt.Fprintf(w, `<svg class="spark %s" width="120" height="24" viewBox="0 0 120 24" role="img" aria-label="%s"><title>%s</title><polyline points="%s"/></svg>`,
			tone, templ.EscapeString(title), templ.EscapeString(title), strings.TrimSpace(pts.String()))
		return err
	})
}

// Bars draws counts (oldest first) as bars with a threshold line when
// threshold > 0. Labels name the left and right ends; the scale says the
// top and zero; each bar's value shows on hover, and the values are the
// chart's text alternative (its description), so a chart of equal bars
// still says what they are.
func Bars(counts []int, threshold int, left, right, title string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		const width, height = 600.0, 100.0
		peak := threshold
		total := 0
		values := make([]string, len(counts))
		for i, c := range counts {
			peak = max(peak, c)
			total += c
			values[i] = strconv.Itoa(c)
		}
		summary := fmt.Sprintf("%s: highest %d, total %d", title, peak, total)
		var b strings.Builder
		fmt.Fprintf(&b, `<svg class="bars" width="600" height="118" viewBox="0 0 600 118" role="img" aria-label="%s"><title>%s</title><desc>%s</desc>`,
			templ.EscapeString(summary), templ.EscapeString(title), templ.EscapeString(left+" to "+right+": "+strings.Join(values, ", ")))
		n := max(len(counts), 1)
		bw := width / float64(n)
		for i, c := range counts {
			if c == 0 || peak == 0 {
				continue
			}
			h := height * float64(c) / float64(peak)
			cls := "bar"
			if threshold > 0 && c > threshold {
				cls = "bar over"
			}
			fmt.Fprintf(&b, `<rect class="%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>%d</title></rect>`, cls, float64(i)*bw, height-h, max(bw-1, 0.5), h, c)
		}
		if threshold > 0 && peak > 0 {
			y := height - height*float64(threshold)/float64(peak)
			fmt.Fprintf(&b, `<line class="threshold" x1="0" x2="600" y1="%.2f" y2="%.2f"/><text class="scale" x="596" y="%.2f" text-anchor="end">threshold %d</text>`, y, y, max(y-2, 9), threshold)
		}
		// The scale: the top is the highest value, the axis zero.
		fmt.Fprintf(&b, `<text class="scale" x="2" y="9" data-testid="chart-max">%d</text><text class="scale" x="2" y="97">0</text>`, peak)
		fmt.Fprintf(&b, `<line class="axis" x1="0" x2="600" y1="100" y2="100"/><text x="0" y="114">%s</text><text x="600" y="114" text-anchor="end">%s</text></svg>`,
			templ.EscapeString(left), templ.EscapeString(right))
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// Heatmap draws days (rows) by hours (columns), each cell coloured by the
// worst slot status of that hour.
func Heatmap(days []HeatDay) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		const cell, gap, left = 16, 2, 90
		height := len(days)*(cell+gap) + 18
		var b strings.Builder
		fmt.Fprintf(&b, `<svg class="heat" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="slots per hour, last 7 days" data-testid="heatmap">`,
			left+24*(cell+gap), height, left+24*(cell+gap), height)
		for i, d := range days {
			y := i * (cell + gap)
			fmt.Fprintf(&b, `<text x="0" y="%d">%s</text>`, y+12, templ.EscapeString(d.Label))
			for h, st := range d.Hours {
				cls := "none"
				if st != "" {
					cls = st
				}
				fmt.Fprintf(&b, `<rect class="%s" x="%d" y="%d" width="%d" height="%d" rx="2"><title>%02d:00 %s</title></rect>`,
					cls, left+h*(cell+gap), y, cell, cell, h, templ.EscapeString(st))
			}
		}
		for h := 0; h < 24; h += 6 {
			fmt.Fprintf(&b, `<text x="%d" y="%d">%02d</text>`, left+h*(cell+gap), height-2, h)
		}
		b.WriteString(`</svg>`)
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// heatLegend names the heatmap's colours, in the order people look for them.
var heatLegend = []string{"ok", "late", "running", "missed", "failed", "overran", "overlapping", "skipped", "pending"}

// HeatLegend draws a key to the Heatmap's colours.
func HeatLegend() templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		const cell, step = 12, 92
		width := len(heatLegend) * step
		var b strings.Builder
		fmt.Fprintf(&b, `<svg class="heat legend" width="%d" height="20" viewBox="0 0 %d 20" role="img" aria-label="key to the slot colours" data-testid="heat-legend">`, width, width)
		for i, st := range heatLegend {
			fmt.Fprintf(&b, `<rect class="%s" x="%d" y="4" width="%d" height="%d" rx="2"/><text x="%d" y="14">%s</text>`, st, i*step, cell, cell, i*step+cell+4, st)
		}
		b.WriteString(`</svg>`)
		_, err := io.WriteString(w, b.String())
		return err
	})
}
