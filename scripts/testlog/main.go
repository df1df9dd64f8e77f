// Command testlog reads `go test -json` on stdin and writes what a person
// reads in a CI log: each package's result line, the whole output of a
// test that failed (and of a package that failed outside its tests), and
// at the end the ten slowest tests with their packages. It exits 1 when
// anything failed, so a pipe with pipefail still fails.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json's stream (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// maxKept bounds what is kept of one test's output until it ends: a test
// that prints without end costs at most this much.
const maxKept = 1 << 20

type timing struct {
	pkg, test string
	failed    bool
	seconds   float64
}

func main() {
	failed, err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) (bool, error) {
	kept := map[string]*strings.Builder{} // package + test: its output so far
	var times []timing
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not test2json (a build error printed as is): pass it on.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			b := kept[key]
			if b == nil {
				b = &strings.Builder{}
				kept[key] = b
			}
			if b.Len() < maxKept {
				b.WriteString(e.Output)
			}
		case "pass", "skip":
			if e.Test == "" {
				fmt.Fprint(out, packageLine(kept[key]))
			} else if e.Action == "pass" {
				times = append(times, timing{pkg: e.Package, test: e.Test, seconds: e.Elapsed})
			}
			delete(kept, key)
		case "fail":
			failed = true
			if b := kept[key]; b != nil {
				fmt.Fprint(out, b.String())
			}
			if e.Test != "" {
				times = append(times, timing{pkg: e.Package, test: e.Test, failed: true, seconds: e.Elapsed})
			}
			delete(kept, key)
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	// A test that never ended (its binary killed at the timeout) shows
	// what it printed.
	for key, b := range kept {
		if strings.TrimSpace(b.String()) != "" && strings.Contains(key, " Test") {
			failed = true
			fmt.Fprintf(out, "--- never ended: %s\n%s", key, b.String())
		}
	}
	writeSlowest(out, times)
	return failed, nil
}

// packageLine is the "ok  pkg  12.3s" line of a package's output.
func packageLine(b *strings.Builder) string {
	if b == nil {
		return ""
	}
	var last string
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
			last = l
		}
	}
	return last
}

// writeSlowest names the ten slowest top-level tests: subtests are inside
// their parents' time.
func writeSlowest(out io.Writer, times []timing) {
	var top []timing
	for _, t := range times {
		if !strings.Contains(t.test, "/") {
			top = append(top, t)
		}
	}
	sort.Slice(top, func(i, j int) bool { return top[i].seconds > top[j].seconds })
	if len(top) > 10 {
		top = top[:10]
	}
	fmt.Fprintln(out, "the ten slowest tests:")
	for _, t := range top {
		mark := ""
		if t.failed {
			mark = " (failed)"
		}
		fmt.Fprintf(out, "  %7.1f s  %s %s%s\n", t.seconds, t.pkg, t.test, mark)
	}
}
