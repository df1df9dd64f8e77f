package testenv

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// fatalTB records a Fatalf and ends its goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func run(f func(tb testing.TB)) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.msg
}

// Eventually returns once the check holds and fails with the last state
// when it never does; Consistently fails the first time it does not hold.
func TestEventuallyAndConsistentlyFailWithTheState(t *testing.T) {
	n := 0
	if msg := run(func(tb testing.TB) {
		Eventually(tb, 5*time.Second, func() (bool, string) { n++; return n == 3, "not yet" })
	}); msg != "" || n != 3 {
		t.Errorf("Eventually of a check true on its third read: %q after %d reads", msg, n)
	}
	if msg := run(func(tb testing.TB) {
		Eventually(tb, 120*time.Millisecond, func() (bool, string) { return false, "still closed" })
	}); msg != "after 120ms: still closed" {
		t.Errorf("Eventually of a check never true: %q", msg)
	}
	start := time.Now()
	if msg := run(func(tb testing.TB) {
		Consistently(tb, 150*time.Millisecond, func() (bool, string) { return true, "" })
	}); msg != "" || time.Since(start) < 150*time.Millisecond {
		t.Errorf("Consistently of a check always true: %q after %s", msg, time.Since(start))
	}
	n = 0
	if msg := run(func(tb testing.TB) {
		Consistently(tb, time.Minute, func() (bool, string) { n++; return n < 2, "moved" })
	}); msg == "" || n != 2 {
		t.Errorf("Consistently of a check false on its second read: %q after %d reads", msg, n)
	}
}
