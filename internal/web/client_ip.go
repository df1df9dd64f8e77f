package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the address per-client limits count by. Behind a proxy
// Fusebox trusts (FUSEBOX_TRUST_PROXY_HEADERS), it is the rightmost
// X-Forwarded-For entry that is not one of the proxy's own addresses
// (loopback, private, link-local, shared), as echo's extractor reads it, but each
// entry may carry a port: App Service's front ends send "ip:port" and
// "[v6]:port", which echo cannot parse and then counted every client as
// the front end's one address. Container Apps' Envoy sends bare addresses.
func clientIP(trustProxy bool) func(*http.Request) string {
	return func(r *http.Request) string {
		direct := directIP(r.RemoteAddr)
		if !trustProxy || !internalAddr(direct) {
			return direct.String()
		}
		var entries []string
		for _, h := range r.Header.Values("X-Forwarded-For") {
			entries = append(entries, strings.Split(h, ",")...)
		}
		for i := len(entries) - 1; i >= 0; i-- {
			ip, ok := forwardedIP(entries[i])
			if !ok {
				break // a malformed hop: believe nothing to its left
			}
			if !internalAddr(ip) || i == 0 {
				return ip.String()
			}
		}
		return direct.String()
	}
}

func directIP(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, _ := netip.ParseAddr(host)
	return ip.Unmap()
}

// forwardedIP reads one X-Forwarded-For entry: "203.0.113.5",
// "203.0.113.5:51234", "2001:db8::7" or "[2001:db8::7]:51234".
func forwardedIP(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if ip, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// sharedSpace is RFC 6598's 100.64.0.0/10, which netip does not count as
// private but platform proxies use (Container Apps' Envoy among them).
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// internalAddr is an address a proxy in front of Fusebox may have.
func internalAddr(ip netip.Addr) bool {
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || sharedSpace.Contains(ip)
}
