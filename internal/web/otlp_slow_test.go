package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// Two apps' keys each hold three uploads that send a byte a second: their
// bodies are read before any decoding slot is taken, so another app's
// export is answered at once, not 503 after waiting for a slot. Each slow
// upload asks "Expect: 100-continue", which the server answers when its
// handler starts reading the body: past the key gate and whatever slot
// is taken before reading.
func TestSlowUploadsHoldNoDecodingSlot(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, app := range []string{"slow-a", "slow-b"} {
		key, hash := auth.NewAppKey(app)
		if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: app, Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/s.json", APIKeyHash: hash}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			fmt.Fprintf(conn, "POST /v1/traces HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", addr, key)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil || !strings.Contains(line, "100 Continue") {
				t.Fatalf("%s's slow upload: %q, %v; want the server reading its body", app, line, err)
			}
			go func() { // a byte a second: the slow client itself
				tick := time.NewTicker(time.Second)
				defer tick.Stop()
				for range 20 {
					if _, err := conn.Write([]byte{0}); err != nil {
						return
					}
					<-tick.C
				}
			}()
		}
	}
	body, _ := proto.Marshal(hostSpans("func-orders-demo", srv.Clock.Now(), 2))
	start := time.Now()
	r := postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", body, false)
	took := time.Since(start)
	wantStatus(t, r, http.StatusOK)
	if took > 2*time.Second {
		t.Errorf("another app's export was answered after %s, want within 2 s", took)
	}
}
