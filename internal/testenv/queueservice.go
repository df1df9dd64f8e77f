package testenv

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// PrivateQueueService starts an Azurite queue service of the test's own,
// in memory, and returns its connection string; it stops when the test
// ends. For tests that fill a queue with thousands of messages: Azurite's
// queue service slows for every other test sharing it as it holds more
// messages, even after they are deleted.
func PrivateQueueService(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(here), "..", "..", "node_modules", ".bin", "azurite-queue")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--queueHost", "127.0.0.1", "--queuePort", fmt.Sprint(port), "--inMemoryPersistence",
		"--silent", "--disableTelemetry", "--skipApiVersionCheck")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (run `npm ci`, which `make test` does): %v", bin, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	Eventually(t, 30*time.Second, func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil, "Azurite's queue service does not listen on " + addr
	})
	return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;QueueEndpoint=http://" + addr + "/devstoreaccount1;"
}
