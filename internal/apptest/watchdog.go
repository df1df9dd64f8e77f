package apptest

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// hangAfter is how long a test may run after its server started before it
// is taken as hung: the longest test here runs for about two minutes under
// the race detector, and go test's own timeout (20 min) would name the
// test at the top of a dump too long for a CI log's tail.
const hangAfter = 8 * time.Minute

// watch ends the test binary when t runs hangAfter past this call: it
// prints every goroutine, then, last, the test's own goroutine and its
// name, so the end of the log says where the test waits.
func watch(t testing.TB) {
	own := make([]byte, 64)
	own = own[:runtime.Stack(own, false)]
	header, _, _ := bytes.Cut(own, []byte(" ["))
	timer := time.AfterFunc(hangAfter, func() {
		all := make([]byte, 32<<20)
		all = all[:runtime.Stack(all, true)]
		_, _ = os.Stderr.Write(all)
		stack := []byte("(not found)")
		for _, g := range bytes.Split(all, []byte("\n\n")) {
			if bytes.HasPrefix(g, append(header, ' ')) {
				stack = g
			}
		}
		fmt.Fprintf(os.Stderr, "\n\nHUNG: %s still runs %s after its server started; its goroutine:\n%s\n", t.Name(), hangAfter, stack)
		os.Exit(3)
	})
	t.Cleanup(func() { timer.Stop() })
}
