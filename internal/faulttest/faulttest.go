// Package faulttest runs several real Fusebox processes on one storage account,
// for tests of what happens between instances: a holder frozen or killed,
// two operators acting at once. Each process is the built `fusebox` binary,
// so nothing is shared but storage, as in production.
package faulttest

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
	product = &build{pkg: "github.com/fusebox/fusebox/cmd/web", name: "fusebox"}
	devTool = &build{pkg: "github.com/fusebox/fusebox/cmd/fusebox-dev", name: "fusebox-dev"}
)

// build is one command, built once per test binary.
type build struct {
	pkg, name string
	once      sync.Once
	path      string
	err       error
}

func (b *build) binary(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "fusebox-fleet-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, b.name)
		out, err := exec.Command("go", "build", "-o", b.path, b.pkg).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Binary builds cmd/web once per test binary and returns its path.
func Binary(t testing.TB) string { t.Helper(); return product.binary(t) }

// Instance is one running `fusebox serve`.
type Instance struct {
	Name   string
	URL    string
	cmd    *exec.Cmd
	log    *syncBuffer
	t      testing.TB
	exited chan struct{} // closed when the process has ended
}

// RunDev runs `fusebox-dev args...` to its end with env, for one-off
// commands such as seed-demo.
func RunDev(t testing.TB, env map[string]string, args ...string) {
	t.Helper()
	cmd := exec.Command(devTool.binary(t), args...)
	cmd.Env = environ(env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fusebox-dev %s: %v\n%s", strings.Join(args, " "), err, out)
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
	// It logs this once it listens, after storage answered at start.
	if !in.WaitLog(context.Background(), 0, "fusebox is serving", 30*time.Second) {
		select {
		case <-in.exited:
			t.Fatalf("%s ended before it was ready:\n%s", name, in.log.String())
		default:
			t.Fatalf("%s did not start serving in 30 s:\n%s", name, in.log.String())
		}
	}
	resp, err := http.Get(in.URL + "/readyz")
	if err != nil {
		t.Fatalf("%s: /readyz: %v", name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s serves but /readyz answers %d:\n%s", name, resp.StatusCode, in.log.String())
	}
	return in
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

// OwnsPort reports whether one of the process's sockets is bound to the
// loopback TCP port (a client's port, as a server sees it): which instance
// is on the other end of a connection.
func (in *Instance) OwnsPort(port int) bool {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 {
				continue
			}
			local := fields[1] // address:port, in hex
			if p, err := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32); err == nil && int(p) == port {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", in.PID()))
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", in.PID(), fd.Name())); err == nil && inodes[target] {
			return true
		}
	}
	return false
}

// Log is everything the process wrote so far.
func (in *Instance) Log() string { return in.log.String() }

// WaitLog waits until the process's log contains s after the first from
// bytes (see LogLen), up to timeout, or the process ends without it.
func (in *Instance) WaitLog(ctx context.Context, from int, s string, timeout time.Duration) bool {
	return in.log.waitFor(ctx, from, s, in.exited, timeout)
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

// syncBuffer is a process's output, which waiters are told of as it grows.
type syncBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	grew chan struct{} // closed at the next write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.grew != nil {
		close(b.grew)
		b.grew = nil
	}
	return b.buf.Write(p)
}

// waitFor waits until the output after the first from bytes contains s,
// up to timeout, or until ended is closed without it.
func (b *syncBuffer) waitFor(ctx context.Context, from int, s string, ended <-chan struct{}, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		text, grew := b.fromAndNext(from)
		if strings.Contains(text, s) {
			return true
		}
		select {
		case <-grew:
		case <-ended:
			return strings.Contains(b.from(from), s)
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// fromAndNext is the output after the first n bytes, and a channel closed
// when more is written.
func (b *syncBuffer) fromAndNext(n int) (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.grew == nil {
		b.grew = make(chan struct{})
	}
	return b.buf.String()[min(n, b.buf.Len()):], b.grew
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
