package testenv

import (
	"testing"
	"time"
)

// Eventually reads state with check until check says done, and fails the
// test with the last state after limit. It is for what has no event to
// wait on (a row another loop writes, a list another instance reads every
// few seconds): the reads come every pollEvery, bounded by limit.
func Eventually(tb testing.TB, limit time.Duration, check func() (done bool, state string)) {
	tb.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if done, _ := check(); done {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			if done, state := check(); !done {
				tb.Fatalf("after %s: %s", limit, state)
			}
			return
		}
	}
}

const pollEvery = 50 * time.Millisecond

// Consistently reads state with check for the whole of d and fails the
// test the first time check says it no longer holds: for what must not
// happen (a trigger switched off again, a checkpoint that moves) over a
// span of real time. The reads come every pollEvery.
func Consistently(tb testing.TB, d time.Duration, check func() (holds bool, state string)) {
	tb.Helper()
	start := time.Now()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if holds, state := check(); !holds {
			tb.Fatalf("after %s: %s", time.Since(start).Round(time.Millisecond), state)
		}
		if time.Since(start) >= d {
			return
		}
		<-tick.C
	}
}
