// Package fanout runs work for several apps side by side, a bounded
// number at once, so that one app's slow dependency holds up only its own
// work.
package fanout

import (
	"errors"
	"sync"
)

// Each calls do for every key of groups with its value, at most parallel
// at once, and joins what they return.
func Each[K comparable, V any](groups map[K]V, parallel int, do func(K, V) error) error {
	keys := make([]K, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	return Indexes(len(keys), parallel, func(i int) error { return do(keys[i], groups[keys[i]]) })
}

// Indexes calls do for every index of [0, n), at most parallel at once,
// and joins what they return.
func Indexes(n, parallel int, do func(int) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		slot = make(chan struct{}, max(parallel, 1))
	)
	for i := range n {
		slot <- struct{}{}
		wg.Go(func() {
			defer func() { <-slot }()
			if err := do(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
