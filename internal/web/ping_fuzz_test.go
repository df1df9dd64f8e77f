package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/jobs"
)

// FuzzPingHandler sends the real server pings with any action, run id,
// method and body. Whatever comes, the answer is plain text with the body
// limit, one of the statuses Healthchecks uses, and "OK" when it counts.
func FuzzPingHandler(f *testing.F) {
	srv := apptest.Start(f, map[string]string{"FUSEBOX_PING_KEY": "ping-key-0123456789", "FUSEBOX_PING_RATE_LIMIT": "100000"})
	if err := srv.App.Store.Jobs.Put(f.Context(), jobs.Job{ID: nightly, PingToken: nightlyToken, Slug: "nightly-backup", Name: "Nightly backup",
		Schedule: "0 0 1 * * *", TimeZone: "UTC", CreatedAt: srv.Clock.Now()}); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct {
		action, rid, body string
		method            uint8
	}{
		{"", "", "", 0}, {"start", "6f1c2a52-8a3e-4c53-9c1e-3a1b2c3d4e5f", "", 2}, {"fail", "", "stack trace", 2},
		{"log", "", strings.Repeat("x", 100_001), 2}, {"0", "", "", 1}, {"255", "", "", 0}, {"256", "", "", 0},
		{"-1", "", "", 0}, {"start", "not-a-uuid", "", 0}, {"nope", "", "", 2}, {"1e3", "", "", 0}, {"%2e%2e", "", "", 0},
	} {
		f.Add(seed.action, seed.rid, seed.body, seed.method)
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost}
	f.Fuzz(func(t *testing.T, action, rid, body string, method uint8) {
		u := srv.URL + "/ping/" + nightlyToken
		if action != "" {
			u += "/" + url.PathEscape(action)
		}
		if rid != "" {
			u += "?rid=" + url.QueryEscape(rid)
		}
		req, err := http.NewRequest(methods[int(method)%len(methods)], u, strings.NewReader(body))
		if err != nil {
			t.Skip(err)
		}
		got := newBrowser(t, "").do(req)
		switch got.StatusCode {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound:
		default:
			t.Fatalf("%s %s: status %d\n%.200s", req.Method, u, got.StatusCode, got.body)
		}
		if ct := got.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("%s %s: answered as %q", req.Method, u, ct)
		}
		if got.StatusCode == http.StatusOK && req.Method != http.MethodHead && got.body != "OK" {
			t.Fatalf("%s %s: 200 says %q", req.Method, u, got.body)
		}
		if got.StatusCode == http.StatusOK && got.Header.Get("Ping-Body-Limit") != "100000" {
			t.Fatalf("%s %s: Ping-Body-Limit %q", req.Method, u, got.Header.Get("Ping-Body-Limit"))
		}
	})
}
