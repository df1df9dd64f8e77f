package faulttest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Azurite is a private Azurite (table and blob, in memory) that a test may
// freeze and thaw without disturbing the tests that share `make test`'s.
type Azurite struct {
	ConnectionString string
	procs            []proc
	t                testing.TB
}

type proc struct {
	cmd   *exec.Cmd
	ended chan struct{} // closed when it has exited
}

// StartAzurite runs the project's pinned Azurite on free ports. A port
// taken between being found free and Azurite listening on it (another
// test's server, an outbound connection) is tried again on fresh ports,
// up to three times.
func StartAzurite(t testing.TB) *Azurite {
	t.Helper()
	for attempt := 1; ; attempt++ {
		a, problem, taken := startAzurite(t)
		if problem == "" {
			return a
		}
		if !taken || attempt == 3 {
			t.Fatal(problem)
		}
	}
}

// startAzurite starts one Azurite; on failure it says why, and whether a
// port was taken meanwhile, with the processes stopped.
func startAzurite(t testing.TB) (a *Azurite, problem string, taken bool) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "node_modules", ".bin")
	tport, bport := freePort(t), freePort(t)
	a = &Azurite{t: t, ConnectionString: fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"+
		"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"+
		"TableEndpoint=http://127.0.0.1:%d/devstoreaccount1;BlobEndpoint=http://127.0.0.1:%d/devstoreaccount1;", tport, bport)}
	common := []string{"--silent", "--disableTelemetry", "--skipApiVersionCheck", "--inMemoryPersistence"}
	type waiting struct {
		name  string
		out   *syncBuffer
		ended chan struct{}
	}
	var started []waiting
	for _, c := range [][]string{
		append([]string{filepath.Join(bin, "azurite-table"), "--tableHost", "127.0.0.1", "--tablePort", strconv.Itoa(tport)}, common...),
		append([]string{filepath.Join(bin, "azurite-blob"), "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(bport), "--extentMemoryLimit", "64"}, common...),
	} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Env = os.Environ()
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			a.stop()
			return nil, fmt.Sprintf("start %s (run `make test` or npm ci first): %v", c[0], err), false
		}
		ended := make(chan struct{})
		go func() { _ = cmd.Wait(); close(ended) }()
		a.procs = append(a.procs, proc{cmd, ended})
		started = append(started, waiting{filepath.Base(c[0]), out, ended})
	}
	// Azurite says so once it listens ("… service successfully started on"
	// for tables, "… successfully listens on" for blobs).
	for _, w := range started {
		if !w.out.waitFor(context.Background(), 0, " service successfully ", w.ended, 30*time.Second) {
			a.stop()
			return nil, fmt.Sprintf("%s did not start in 30 s:\n%s", w.name, w.out.String()), strings.Contains(w.out.String(), "EADDRINUSE")
		}
	}
	t.Cleanup(a.stop)
	return a, "", false
}

// stop ends the processes.
func (a *Azurite) stop() {
	for _, p := range a.procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.ended
	}
	a.procs = nil
}

// Freeze stops Azurite where it is: connections stay open and nothing is
// answered, as with a storage outage seen from the client.
func (a *Azurite) Freeze() { a.signal(syscall.SIGSTOP) }

// Thaw lets it answer again.
func (a *Azurite) Thaw() { a.signal(syscall.SIGCONT) }

func (a *Azurite) signal(s syscall.Signal) {
	for _, p := range a.procs {
		if err := p.cmd.Process.Signal(s); err != nil {
			a.t.Fatal(err)
		}
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
