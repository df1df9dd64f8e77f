// Package fleet runs several real Fusebox processes on one storage account,
// for tests of what happens between instances: a holder frozen or killed,
// two operators acting at once. Each process is the built `fusebox` binary,
// so nothing is shared but storage, as in production.
package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary builds cmd/web once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fusebox-fleet-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "fusebox")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/fusebox/fusebox/cmd/web").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// Instance is one running `fusebox serve`.
type Instance struct {
	Name   string
	URL    string
	cmd    *exec.Cmd
	log    *syncBuffer
	t      testing.TB
	exited chan struct{} // closed when the process has ended
}

// Run runs `fusebox args...` to its end with env, for one-off commands
// such as seed-demo.
func Run(t testing.TB, env map[string]string, args ...string) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = environ(env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fusebox %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Start runs `fusebox serve` with env on a free port and returns once it
// answers /readyz. The process is killed when the test ends.
func Start(t testing.TB, name string, env map[string]string) *Instance {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	vars := map[string]string{"FUSEBOX_HTTP_ADDR": addr, "FUSEBOX_BASE_URL": "http://" + addr}
	for k, v := range env {
		vars[k] = v
	}
	in := &Instance{Name: name, URL: "http://" + addr, log: &syncBuffer{}, t: t, exited: make(chan struct{})}
	in.cmd = exec.Command(Binary(t), "serve")
	in.cmd.Env = environ(vars)
	in.cmd.Stdout, in.cmd.Stderr = in.log, in.log
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = in.cmd.Wait(); close(in.exited) }()
	t.Cleanup(func() {
		_ = in.cmd.Process.Signal(syscall.SIGCONT) // a frozen process cannot die
		_ = in.cmd.Process.Kill()
		<-in.exited
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, in.log.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(in.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in
			}
		}
		select {
		case <-in.exited:
			t.Fatalf("%s ended before it was ready:\n%s", name, in.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become ready in 30 s:\n%s", name, in.log.String())
		}
		time.Sleep(50 * time.Millisecond) // poll, bounded by the deadline
	}
}

// PID is the process id, which the lease holder's identity contains.
func (in *Instance) PID() int { return in.cmd.Process.Pid }

// Holds reports whether a lease holder identity ("host/pid/suffix") is
// this process.
func (in *Instance) Holds(holder string) bool {
	parts := strings.Split(holder, "/")
	return len(parts) == 3 && parts[1] == strconv.Itoa(in.PID())
}

// Freeze stops the process where it is (SIGSTOP), as a VM pause or a long
// garbage collection would: it neither works nor answers, and does not
// know it.
func (in *Instance) Freeze() {
	if err := in.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		in.t.Fatal(err)
	}
}

// Thaw lets a frozen process go on (SIGCONT).
func (in *Instance) Thaw() {
	if err := in.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		in.t.Fatal(err)
	}
}

// Log is everything the process wrote so far.
func (in *Instance) Log() string { return in.log.String() }

// WaitLog waits until the process's log contains s after the first from
// bytes (see LogLen), up to timeout.
func (in *Instance) WaitLog(ctx context.Context, from int, s string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if strings.Contains(in.log.from(from), s) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond) // poll, bounded by the deadline
	}
}

// LogLen is the log's length now, to wait for what comes after.
func (in *Instance) LogLen() int { return in.log.len() }

func environ(vars map[string]string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TZ=UTC"}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *syncBuffer) from(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()[min(n, b.buf.Len()):]
}
