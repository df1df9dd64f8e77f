package fanout_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fusebox/fusebox/internal/fanout"
)

// Every group runs, never more than the bound at once, and every error
// is returned.
func TestEachRunsEveryGroupWithinTheBound(t *testing.T) {
	groups := map[string]int{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
	var now, most, sum atomic.Int64
	err := fanout.Each(groups, 2, func(k string, v int) error {
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		defer now.Add(-1)
		sum.Add(int64(v))
		if v%2 == 0 {
			return errors.New("even " + k)
		}
		return nil
	})
	if sum.Load() != 15 || most.Load() > 2 {
		t.Errorf("sum %d (want 15), at most %d at once (want ≤ 2)", sum.Load(), most.Load())
	}
	if err == nil || !strings.Contains(err.Error(), "even b") || !strings.Contains(err.Error(), "even d") {
		t.Errorf("errors: %v", err)
	}
}
