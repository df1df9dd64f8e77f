// Command summary reads `go test -bench` output (several runs of each
// benchmark, from -count) and prints, per benchmark and metric, the median
// of the runs, their spread (lowest–highest) and the number of runs. For a
// metric that is itself a maximum (max-s, max-ms, …) the highest run is the
// figure that matters; it is the right end of the spread.
//
//	go test ./internal/bench -bench . -count 3 | go run ./internal/bench/summary
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// benchLine is "BenchmarkName-2   <N>   <value> <unit>   <value> <unit> ...".
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

type key struct{ bench, unit string }

func main() {
	if err := summarize(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(1)
	}
}

func summarize(r io.Reader, w io.Writer) error {
	values := map[key][]float64{}
	var order []key
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			k := key{m[1], fields[i+1]}
			if k.unit == "ns/op" && v == 0 {
				continue // benchmarks that report their own figures zero it
			}
			if _, seen := values[k]; !seen {
				order = append(order, k)
			}
			values[k] = append(values[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].bench < order[j].bench })
	fmt.Fprintf(w, "%-58s %-30s %12s %25s %5s\n", "benchmark", "metric", "median", "spread (low–high)", "runs")
	last := ""
	for _, k := range order {
		vs := slices.Clone(values[k])
		slices.Sort(vs)
		name := k.bench
		if name == last {
			name = ""
		}
		last = k.bench
		fmt.Fprintf(w, "%-58s %-30s %12s %25s %5d\n", name, k.unit, format(median(vs)), format(vs[0])+" – "+format(vs[len(vs)-1]), len(vs))
	}
	return nil
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
