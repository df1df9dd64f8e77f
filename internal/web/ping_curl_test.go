package web_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// runCurl runs the real curl with Healthchecks' documented flags and
// returns its exit code, standard output and the response headers.
func runCurl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	headers := filepath.Join(t.TempDir(), "headers")
	cmd := exec.CommandContext(t.Context(), "curl", append([]string{"-fsS", "-m", "10", "--retry", "5", "-D", headers}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("curl: %v", err)
	}
	h, _ := os.ReadFile(headers)
	return code, out.String() + errOut.String(), string(h)
}

// A crontab line that POSTs the tail of its log, however long, records
// its run: the first 100 kB are kept, the answer is OK, and the limit is
// in the Ping-Body-Limit header, as Healthchecks does.
func TestCurlWithALongLogRecordsTheRun(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed: the ping tests drive the real curl")
	}
	srv := pingServer(t)
	dir := t.TempDir()
	for i, size := range []int{300_000, 5_000_000} {
		log := filepath.Join(dir, "job.log")
		line := "2026-11-30 09:00:00 processed one more batch of orders\n"
		if err := os.WriteFile(log, []byte(strings.Repeat(line, size/len(line)+1)[:size]), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, headers := runCurl(t, "--data-binary", "@"+log, srv.URL+"/ping/"+nightlyToken)
		if code != 0 || out != "OK" {
			t.Fatalf("%d bytes: curl exit %d, output %q", size, code, out)
		}
		if !strings.Contains(strings.ToLower(headers), "ping-body-limit: 100000") {
			t.Errorf("%d bytes: headers lack Ping-Body-Limit:\n%s", size, headers)
		}
		got := runs(t, srv, nightly)
		if len(got) != i+1 || got[0].State != "ok" || len(got[0].Log) != storage.MaxLog || !strings.HasPrefix(got[0].Log, "2026-11-30 09:00:00 processed") {
			t.Fatalf("%d bytes: runs %d, newest %s with a %d-byte log", size, len(got), got[0].State, len(got[0].Log))
		}
		srv.Clock.Advance(time.Minute)
	}
	// curl -f fails on Fusebox's 400s, as on Healthchecks'.
	if code, out, _ := runCurl(t, srv.URL+"/ping/"+nightlyToken+"/start?rid=not-a-uuid"); code != 22 || !strings.Contains(out, "400") {
		t.Errorf("a bad rid: curl exit %d, %q; want 22 and the 400", code, out)
	}
}

// A client that floods the ping API gets 429 with Retry-After, recovers
// once its bucket refills, and another client is never affected.
func TestAPingFloodIsThrottledAndOthersAreNot(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_PING_RATE_LIMIT": "2", "FUSEBOX_TRUST_PROXY_HEADERS": "true"})
	ping := func(client string) response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ping/00000000-0000-4000-8000-00000000abcd", nil)
		req.Header.Set("X-Forwarded-For", client)
		return newBrowser(t, "").do(req)
	}
	throttled := -1
	for i := range 40 {
		if r := ping("203.0.113.7"); r.StatusCode == http.StatusTooManyRequests {
			if r.Header.Get("Retry-After") != "1" || !strings.Contains(r.body, "too many pings") {
				t.Errorf("429 without Retry-After or reason: %v %q", r.Header, r.body)
			}
			throttled = i
			break
		}
	}
	if throttled < 0 {
		t.Fatal("40 pings at once from one address were never throttled (rate 2/s, burst 20)")
	}
	if r := ping("198.51.100.9"); r.StatusCode != http.StatusNotFound {
		t.Errorf("another client got %d while the first is throttled", r.StatusCode)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) { // the bucket refills on the real clock
		return ping("203.0.113.7").StatusCode != http.StatusTooManyRequests, "the flooding client is still throttled at 2 pings/s"
	})
}

// TestAPingFloodBehindAppServiceThrottlesOnlyItsClient floods through the
// forms App Service and Container Apps write in X-Forwarded-For, with the
// client's port: the flooding address is throttled, and clients at other
// addresses, IPv4 or IPv6 and with ports of their own, are not.
func TestAPingFloodBehindAppServiceThrottlesOnlyItsClient(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_PING_RATE_LIMIT": "2", "FUSEBOX_TRUST_PROXY_HEADERS": "true"})
	ping := func(forwarded string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ping/00000000-0000-4000-8000-00000000abcd", nil)
		req.Header.Set("X-Forwarded-For", forwarded)
		return newBrowser(t, "").do(req).StatusCode
	}
	throttled := false
	for i := range 40 {
		if ping(fmt.Sprintf("203.0.113.5:%d", 40000+i)) == http.StatusTooManyRequests {
			throttled = true
			break
		}
	}
	if !throttled {
		t.Fatal("40 pings at once from 203.0.113.5, each from a port of its own, were never throttled")
	}
	for _, other := range []string{"198.51.100.7:51234", "[2001:db8::7]:51234", "2001:db8::8"} {
		if code := ping(other); code != http.StatusNotFound {
			t.Errorf("a ping forwarded for %s got %d while 203.0.113.5 is throttled", other, code)
		}
	}
}
