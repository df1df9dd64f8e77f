package main

import (
	"strings"
	"testing"
)

// A failed test's output is shown whole, a passing test's not at all, and
// the slowest tests are named with their packages.
func TestTheLogShowsFailuresAndTheSlowest(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"output","Package":"p","Test":"TestQuiet","Output":"=== RUN   TestQuiet\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestQuiet","Elapsed":3.5}`,
		`{"Action":"output","Package":"p","Test":"TestBroken","Output":"    broken_test.go:9: the page said nothing\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBroken","Elapsed":1.25}`,
		`{"Action":"pass","Package":"p","Test":"TestQuiet/sub","Elapsed":9}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t4.8s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":4.8}`,
		`# a build error, not JSON`,
	}, "\n")
	var out strings.Builder
	failed, err := run(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("a failed test did not fail the run")
	}
	got := out.String()
	for _, want := range []string{"the page said nothing", "FAIL\tp\t4.8s", "# a build error, not JSON", "3.5 s  p TestQuiet\n", "1.2 s  p TestBroken (failed)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=== RUN") || strings.Contains(got, "TestQuiet/sub") {
		t.Errorf("the log shows a passing test's output or a subtest among the slowest:\n%s", got)
	}
}
