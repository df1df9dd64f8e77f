package web

import (
	"net/http"
	"testing"
)

// TestClientAddressesBehindAppServiceAndContainerApps: every form a front
// end sends names its client, so per-client limits count clients, not
// the front end.
func TestClientAddressesBehindAppServiceAndContainerApps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, remote, xff string
		trust             bool
		want              string
	}{
		{"App Service: ip:port", "169.254.129.3:41000", "203.0.113.5:51234", true, "203.0.113.5"},
		{"App Service: [v6]:port", "169.254.129.3:41000", "[2001:db8::7]:51234", true, "2001:db8::7"},
		{"Container Apps: bare", "10.0.0.4:5000", "198.51.100.7", true, "198.51.100.7"},
		{"a proxy in the shared address space", "100.100.0.12:5000", "198.51.100.7", true, "198.51.100.7"},
		{"bare IPv6", "10.0.0.4:5000", "2001:db8::8", true, "2001:db8::8"},
		{"a chain: the rightmost outside address", "10.0.0.4:5000", "192.0.2.66, 198.51.100.7:443, 10.1.2.3", true, "198.51.100.7"},
		{"a malformed hop believes nothing before it", "10.0.0.4:5000", "198.51.100.7, not-an-ip", true, "10.0.0.4"},
		{"not behind a trusted proxy: the header is ignored", "203.0.113.9:5000", "198.51.100.7", true, "203.0.113.9"},
		{"proxy headers not trusted", "10.0.0.4:5000", "198.51.100.7", false, "10.0.0.4"},
		{"no header", "10.0.0.4:5000", "", true, "10.0.0.4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.remote
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			if got := clientIP(c.trust)(r); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}
