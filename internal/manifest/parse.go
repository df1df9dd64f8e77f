package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxBytes bounds a file: a few thousand circuits and jobs fit in far less.
const MaxBytes = 4 << 20

// Problem is one thing wrong with a file, at its line (0: the file).
type Problem struct {
	Line int
	What string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.What
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.What)
}

// Problems are every problem of a file, by line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (ps *Problems) add(line int, format string, args ...any) {
	*ps = append(*ps, Problem{line, fmt.Sprintf(format, args...)})
}

func (ps Problems) sorted() Problems {
	slices.SortStableFunc(ps, func(a, b Problem) int { return a.Line - b.Line })
	return ps
}

// yamlLine reads the line out of yaml's own messages ("yaml: line 3: …",
// "line 5: field x not found in type …").
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Parse reads a file. Fields it does not know, values of the wrong type
// and text that is no YAML are problems, each with its line; so is a
// file of another version.
func Parse(data []byte) (Doc, Problems) {
	var ps Problems
	if len(data) > MaxBytes {
		ps.add(0, "the file is %d bytes; a file may be at most %d", len(data), MaxBytes)
		return Doc{}, ps
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		ps = append(ps, yamlProblems(err)...)
		return Doc{}, ps
	}
	var doc Doc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		ps = append(ps, yamlProblems(err)...)
		return Doc{}, ps.sorted()
	}
	if doc.Version != Version {
		ps.add(lineOf(&root, "version"), "version must be %d", Version)
	}
	setLines(&root, &doc)
	return doc, ps
}

func yamlProblems(err error) Problems {
	var ps Problems
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, m := range msgs {
		if g := yamlLine.FindStringSubmatch(m); g != nil {
			n, _ := strconv.Atoi(g[1])
			ps.add(n, "%s", g[2])
		} else {
			ps.add(0, "%s", strings.TrimPrefix(m, "yaml: "))
		}
	}
	return ps
}

// lineOf is the line of a top-level key, 0 when absent.
func lineOf(root *yaml.Node, key string) int {
	if k, _ := field(top(root), key); k != nil {
		return k.Line
	}
	return 0
}

func top(root *yaml.Node) *yaml.Node {
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		return root.Content[0]
	}
	return root
}

// field finds key in a mapping node: its key node and value node.
func field(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// setLines gives each entry the line it starts on.
func setLines(root *yaml.Node, doc *Doc) {
	items := func(key string) []*yaml.Node {
		if _, v := field(top(root), key); v != nil && v.Kind == yaml.SequenceNode {
			return v.Content
		}
		return nil
	}
	set := func(key string, n int, line func(i, l int)) {
		for i, it := range items(key) {
			if i < n {
				line(i, it.Line)
			}
		}
	}
	set("channels", len(doc.Channels), func(i, l int) { doc.Channels[i].Line = l })
	set("apps", len(doc.Apps), func(i, l int) { doc.Apps[i].Line = l })
	set("circuits", len(doc.Circuits), func(i, l int) { doc.Circuits[i].Line = l })
	set("jobs", len(doc.Jobs), func(i, l int) { doc.Jobs[i].Line = l })
	set("maintenance", len(doc.Maintenance), func(i, l int) { doc.Maintenance[i].Line = l })
	set("teams", len(doc.Teams), func(i, l int) { doc.Teams[i].Line = l })
}

// Marshal writes doc as a file, its entries in a fixed order, so that the
// same configuration is the same bytes.
func Marshal(doc Doc, header string) ([]byte, error) {
	doc.Version = Version
	doc.sort()
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimSpace(header), "\n") {
		if l != "" {
			b.WriteString("# " + l + "\n")
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return b.Bytes(), nil
}

func (d *Doc) sort() {
	slices.SortFunc(d.Channels, func(a, b Channel) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(d.Apps, func(a, b App) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(d.Circuits, func(a, b Circuit) int { return strings.Compare(a.App+"/"+a.Function, b.App+"/"+b.Function) })
	slices.SortFunc(d.Jobs, func(a, b Job) int { return strings.Compare(a.Key(), b.Key()) })
	slices.SortFunc(d.Maintenance, func(a, b Window) int { return strings.Compare(a.Key(), b.Key()) })
	for i := range d.Circuits {
		slices.Sort(d.Circuits[i].Recipients)
		slices.Sort(d.Circuits[i].Channels)
		slices.Sort(d.Circuits[i].EscalateTo)
	}
	for i := range d.Jobs {
		slices.Sort(d.Jobs[i].Recipients)
		slices.Sort(d.Jobs[i].Channels)
		slices.Sort(d.Jobs[i].Tags)
	}
	for i := range d.Apps {
		slices.Sort(d.Apps[i].Channels)
		slices.Sort(d.Apps[i].EscalateTo)
	}
	for i := range d.Channels {
		slices.Sort(d.Channels[i].Addresses)
	}
}
