package web

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadinessIsCheckedOnceASecond: a hundred probes at once, anonymous
// and each costing three storage reads before, make one check.
func TestReadinessIsCheckedOnceASecond(t *testing.T) {
	t.Parallel()
	var r readiness
	var checks atomic.Int32
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			code, _ := r.answer(func() (int, map[string]string) {
				checks.Add(1)
				return http.StatusOK, map[string]string{"status": "ready"}
			})
			if code != http.StatusOK {
				t.Errorf("answered %d", code)
			}
		})
	}
	wg.Wait()
	if n := checks.Load(); n != 1 {
		t.Errorf("100 probes within a second made %d checks, want 1", n)
	}
}
