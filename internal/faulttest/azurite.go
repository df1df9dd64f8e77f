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

// StartAzurite runs the project's pinned Azurite on free ports.
func StartAzurite(t testing.TB) *Azurite {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "node_modules", ".bin")
	tport, bport := freePort(t), freePort(t)
	a := &Azurite{t: t, ConnectionString: fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"+
		"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"+
		"TableEndpoint=http://127.0.0.1:%d/devstoreaccount1;BlobEndpoint=http://127.0.0.1:%d/devstoreaccount1;", tport, bport)}
	common := []string{"--silent", "--disableTelemetry", "--skipApiVersionCheck", "--inMemoryPersistence"}
	var started []func() bool
	for _, c := range [][]string{
		append([]string{filepath.Join(bin, "azurite-table"), "--tableHost", "127.0.0.1", "--tablePort", strconv.Itoa(tport)}, common...),
		append([]string{filepath.Join(bin, "azurite-blob"), "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(bport), "--extentMemoryLimit", "64"}, common...),
	} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Env = os.Environ()
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s (run `make test` or npm ci first): %v", c[0], err)
		}
		ended := make(chan struct{})
		go func() { _ = cmd.Wait(); close(ended) }()
		a.procs = append(a.procs, proc{cmd, ended})
		// Azurite says so once it listens ("… service successfully started on"
		// for tables, "… successfully listens on" for blobs).
		started = append(started, func() bool {
			if out.waitFor(context.Background(), 0, " service successfully ", ended, 30*time.Second) {
				return true
			}
			t.Errorf("%s did not start in 30 s:\n%s", filepath.Base(c[0]), out.String())
			return false
		})
	}
	t.Cleanup(func() {
		for _, p := range a.procs {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			<-p.ended
		}
	})
	for _, ok := range started {
		if !ok() {
			t.FailNow()
		}
	}
	return a
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
