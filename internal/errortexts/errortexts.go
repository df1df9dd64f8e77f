// Package errortexts groups a circuit's failures by what their error text
// says, the way a person reads them: the same error with another id,
// number, path or quoted value is one group.
package errortexts

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/spoken"
)

// What varies between occurrences of one error, folded in this order
// (a GUID holds hex and numbers; a URL holds a path).
var folds = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`), "<guid>"},
	{regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"]+`), "<url>"},
	{regexp.MustCompile(`'[^']*'|"[^"]*"|‘[^’]*’|“[^”]*”`), "<quoted>"},
	{regexp.MustCompile(`(?:[A-Za-z]:\\|\\\\|/)[^\s'":,;]*[/\\][^\s'":,;]*`), "<path>"},
	{regexp.MustCompile(`\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{8,}\b`), "<hex>"},
	{regexp.MustCompile(`[-+]?\d+(?:[.,:]\d+)*`), "<n>"},
	{regexp.MustCompile(`\s+`), " "},
}

// MaxText bounds the text a fingerprint reads: samples are kept at 1 kB.
const MaxText = 1024

// Fingerprint is msg with what varies folded: "Timeout after 30 s
// reading 'orders/42'" and "Timeout after 12 s reading 'orders/7'" are
// one group.
func Fingerprint(msg string) string {
	msg = cutText(msg)
	for _, f := range folds {
		msg = f.re.ReplaceAllString(msg, f.with)
	}
	return strings.TrimSpace(msg)
}

// folded remembers the fingerprints of texts already folded: a closed
// circuit's groups are read again every few seconds (Cache), mostly of the
// same texts, and folding a text (seven regular expressions over up to
// 1 kB) was most of what grouping cost.
var folded = memo{max: 8 << 20}

// memo is Fingerprint remembered, bounded in bytes: two generations, the
// older dropped when the newer holds half of max; a text found in the
// older moves to the newer.
type memo struct {
	mu       sync.Mutex
	max      int
	cur, old map[string]string
	bytes    int // held by cur
}

// entryBytes is what a remembered fingerprint costs besides its two texts:
// the map's slot and the strings' headers.
const entryBytes = 64

func (m *memo) fingerprint(text string) string {
	text = cutText(text)
	m.mu.Lock()
	fp, ok := m.cur[text]
	if !ok {
		if fp, ok = m.old[text]; ok {
			m.keep(text, fp)
		}
	}
	m.mu.Unlock()
	if ok {
		return fp
	}
	fp = Fingerprint(text)
	m.mu.Lock()
	m.keep(text, fp)
	m.mu.Unlock()
	return fp
}

func (m *memo) keep(text, fp string) {
	n := len(text) + len(fp) + entryBytes
	if m.cur == nil || m.bytes+n > m.max/2 {
		m.old, m.cur, m.bytes = m.cur, map[string]string{}, 0
	}
	if _, ok := m.cur[text]; !ok {
		// A copy: the key must not hold a row's longer text alive.
		m.cur[strings.Clone(text)] = fp
		m.bytes += n
	}
}

// Kind is the fingerprint failures of text are grouped by, remembered
// as Of remembers it; NoText for a text that says nothing.
func Kind(text string) string {
	if strings.TrimSpace(text) == "" {
		return NoText
	}
	return folded.fingerprint(text)
}

// cutText is msg's first MaxText bytes, cut at a character, never inside
// one (a fingerprint is a text people read, and a key).
func cutText(msg string) string {
	if len(msg) <= MaxText {
		return msg
	}
	n := MaxText
	for n > 0 && msg[n]&0xc0 == 0x80 {
		n--
	}
	return msg[:n]
}

// Sample is one stored failure row's error text: Count failures of one
// second from one source (a row keeps the last text its writer sent).
type Sample struct {
	Text   string
	At     time.Time
	Count  int
	Source string // the instance
	Trace  string // a W3C traceparent, when the report had one
	// Other says the failures are of kinds past what their row keeps
	// (circuit.MaxRowErrors): grouped as OtherKinds, whatever Text says.
	Other bool
}

// Group is the failures whose text folds to one fingerprint.
type Group struct {
	Fingerprint string
	Example     string // the latest text of the group, as it was
	Count       int
	First, Last time.Time
	Sources     []string // the instances that reported it, at most MaxListed
	Traces      []string // sample trace ids, at most MaxListed
	// Spans are, for each of Traces in order, the span of the call that
	// reported it (the traceparent's parent id): Application Insights
	// keeps that call as an item of its transaction.
	Spans []string
}

// MaxListed bounds a group's instances and trace ids.
const MaxListed = 5

// NoText names the group of failures reported without an error text.
const NoText = "(no error text was reported)"

// OtherKinds names the group of failures whose rows held more kinds of
// error in one second than a row keeps.
const OtherKinds = "(other errors: more kinds in one second than a row keeps apart)"

// Of groups samples, most failures first, and keeps at most max groups;
// other counts the failures of the groups left out.
func Of(samples []Sample, max int) (groups []Group, other int) {
	byPrint := map[string]*Group{}
	for _, s := range samples {
		if s.Count <= 0 {
			continue
		}
		fp := Kind(s.Text)
		if s.Other {
			fp = OtherKinds
		}
		g, ok := byPrint[fp]
		if !ok {
			g = &Group{Fingerprint: fp, First: s.At, Last: s.At, Example: s.Text}
			byPrint[fp] = g
		}
		g.Count += s.Count
		if s.At.Before(g.First) {
			g.First = s.At
		}
		if !s.At.Before(g.Last) {
			g.Last, g.Example = s.At, cmp.Or(s.Text, g.Example)
		}
		if s.Source != "" && !slices.Contains(g.Sources, s.Source) && len(g.Sources) < MaxListed {
			g.Sources = append(g.Sources, s.Source)
		}
		if id, span := traceParts(s.Trace); id != "" && !slices.Contains(g.Traces, id) && len(g.Traces) < MaxListed {
			g.Traces, g.Spans = append(g.Traces, id), append(g.Spans, span)
		}
	}
	for _, g := range byPrint {
		groups = append(groups, *g)
	}
	slices.SortFunc(groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), b.Last.Compare(a.Last), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	if max >= 0 && len(groups) > max {
		for _, g := range groups[max:] {
			other += g.Count
		}
		groups = groups[:max]
	}
	for i := range groups {
		slices.Sort(groups[i].Sources)
	}
	return groups, other
}

// traceID is the trace id of a W3C traceparent ("00-<32 hex>-<16 hex>-01").
// traceParts are the trace id and the parent (span) id of a W3C
// traceparent ("00-<32 hex>-<16 hex>-01"); none of a malformed one.
func traceParts(tp string) (trace, span string) {
	parts := strings.Split(tp, "-")
	if len(parts) == 4 && len(parts[1]) == 32 && len(parts[2]) == 16 && lowerHex(parts[1]) && lowerHex(parts[2]) {
		return parts[1], parts[2]
	}
	return "", ""
}

func lowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Rows reads at most limit of one circuit's failure rows with their texts
// (storage.Failures.CircuitSamples); more says rows were left unread.
type Rows interface {
	CircuitSamples(ctx context.Context, app, function string, from, to time.Time, limit int) (rows []circuit.FailureRow, more bool, err error)
}

// MaxRows bounds the failure rows one grouping reads: a row is one
// second of one instance, so a long window of a large fleet would
// otherwise cost every page view millions of rows. Past it, the groups
// are of the window's first MaxRows stored seconds, and say so.
const MaxRows = 2000

// OfCircuit groups the failures of a circuit's window: the window before
// it opened while its trigger is off, else the window up to now. span
// says which, in words.
func OfCircuit(ctx context.Context, rows Rows, ci circuit.Circuit, now time.Time, max int) (groups []Group, other int, span string, err error) {
	from, to, span := spanOf(ci, now)
	groups, other, partial, err := Between(ctx, rows, ci.AppID, ci.Function, from, to, max)
	if partial {
		span += fmt.Sprintf(", of its first %d stored seconds (the rest were not read)", MaxRows)
	}
	return groups, other, span, err
}

// spanOf is the span of a circuit's failures OfCircuit groups: the window
// before it opened while its trigger is off, else the window up to now.
func spanOf(ci circuit.Circuit, now time.Time) (from, to time.Time, span string) {
	if ci.State.TriggerOff() && !ci.ChangedAt.IsZero() {
		to = ci.ChangedAt
		return to.Add(-ci.Window), to, "the " + spoken.Duration(ci.Window) + " before it opened"
	}
	return now.Add(-ci.Window), now, "the window (the last " + spoken.Duration(ci.Window) + ")"
}

// Between groups one circuit's failures from from to to, reading at most
// MaxRows rows; partial says the rest were not read.
func Between(ctx context.Context, rows Rows, appID, function string, from, to time.Time, max int) (groups []Group, other int, partial bool, err error) {
	rs, partial, err := rows.CircuitSamples(ctx, appID, function, from.Truncate(time.Second), to, MaxRows)
	if err != nil {
		return nil, 0, false, err
	}
	// Records that a span of the same calls counted are not grouped
	// again; records still waiting for spans are.
	rs = circuit.Countable(rs, to.Add(circuit.RecordsGrace))
	samples := make([]Sample, 0, len(rs))
	for _, r := range rs {
		samples = appendRow(samples, r)
	}
	groups, other = Of(samples, max)
	return groups, other, partial, nil
}

// appendRow adds a row's samples: one per kind of error when the row
// kept its failures by kind, and the failures of kinds past its bound as
// other errors; else its Sample stands for all of them.
func appendRow(samples []Sample, r circuit.FailureRow) []Sample {
	s := Sample{Text: r.Sample, At: r.Second, Count: r.Count, Source: r.Source, Trace: r.TraceParent}
	if len(r.Errors) == 0 {
		return append(samples, s)
	}
	left := r.Count
	for _, e := range r.Errors {
		s.Text, s.Count = e.Text, e.Count
		samples = append(samples, s)
		left -= e.Count
	}
	if left > 0 {
		s.Text, s.Count, s.Other = "", left, true
		samples = append(samples, s)
	}
	return samples
}

// Text is the group's latest text, or NoText.
func (g Group) Text() string {
	switch g.Fingerprint {
	case NoText, OtherKinds:
		return g.Fingerprint
	}
	return g.Example
}

// Line says a group in one line for mail and chat: "4 × Timeout after
// 30 s (vm-1, vm-2)", its text cut at n bytes.
func (g Group) Line(n int) string {
	text := g.Text()
	if len(text) > n {
		for n > 0 && text[n]&0xc0 == 0x80 {
			n--
		}
		text = text[:n] + "…"
	}
	line := fmt.Sprintf("%d × %s", g.Count, text)
	if len(g.Sources) > 0 {
		line += " (" + strings.Join(g.Sources, ", ") + ")"
	}
	return line
}
