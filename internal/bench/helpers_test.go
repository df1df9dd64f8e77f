package bench_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// signIn returns an HTTP client signed in to srv as the operator olivia.
func signIn(b testing.TB, srv *apptest.Server) *http.Client {
	b.Helper()
	return signInAs(b, srv, "olivia")
}

// signInAs is signIn as user.
func signInAs(b testing.TB, srv *apptest.Server, user string) *http.Client {
	b.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(srv.URL + "/login")
	if err != nil {
		b.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		b.Fatal("no CSRF token on the sign-in page")
	}
	form := url.Values{"_csrf": {string(m[1])}, "username": {user}, "password": {apptest.Password}}
	resp, err = c.Post(srv.URL+"/login", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("sign-in ended with %d", resp.StatusCode)
	}
	return c
}

// rawTable is a fresh table reached with plain aztables, for the raw-store
// side of a ratio; it is deleted when the benchmark ends.
func rawTable(b *testing.B) *aztables.Client {
	b.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(b), &aztables.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	name := testenv.Prefix(b) + "Raw"
	if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	return svc.NewClient(name)
}

// measure times get once per iteration and reports the median, the 99th
// percentile and the worst sample.
func measure(b *testing.B, get func() error) {
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := get(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	b.ReportMetric(ms(percentile(times, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(times, 0.99)), "p99-ms")
	b.ReportMetric(ms(slices.Max(times)), "max-ms")
	b.ReportMetric(0, "ns/op")
}
