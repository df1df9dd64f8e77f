// Package egress is the one way out of Fusebox for calls whose address an
// operator or a remote party chose: chat and webhook channels, the host
// storage and Event Hubs of guarded apps. Fusebox's identity can rewrite
// every guarded app, so such a call must never reach an address inside the
// network Fusebox runs in (the instance metadata service, a private
// endpoint the operator did not allow, Fusebox's own loopback), and must
// never carry a token for a scope the call does not need.
//
// It promises:
//   - Policy.Dialer refuses loopback, private, link-local (IMDS's
//     169.254.169.254 among them), CGNAT, multicast, unspecified and
//     reserved addresses (Azure's 168.63.129.16 among them), and IPv6
//     forms that embed a refused IPv4 address (NAT64, 6to4), at connect
//     time, on the address actually dialled, so a name that resolves to
//     one (DNS rebinding included) is refused too;
//     loopback only when the policy allows it (development), and private
//     prefixes only when the operator lists them (private endpoints);
//   - Policy.Client never follows a redirect and has no proxy;
//   - Endpoints admit only TLS endpoints under Azure's service suffixes;
//   - Scoped refuses to ask its credential for any scope but the ones it
//     was made for, whatever a server's challenge names;
//   - Describe turns an error into words fit for a page or a log: a class
//     and the endpoint's host, never what the remote server said.
//
// It does not inspect what is sent: callers choose that.
package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrRefused is a connection the policy did not allow.
var ErrRefused = errors.New("egress: address not allowed")

// cgnat is the shared address space of RFC 6598, which netip does not
// count as private but which is no more public than 10/8.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// reserved are ranges no public service lives at: Azure's platform
// address (WireServer and its DNS, reachable from every VM), "this
// network", IETF protocol assignments, benchmarking and the old class E
// with broadcast.
var reserved = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("168.63.129.16/32"), "Azure's platform address (WireServer)"},
	{netip.MustParsePrefix("0.0.0.0/8"), `reserved ("this network")`},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol assignments)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (class E and broadcast)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "reserved (local NAT64)"},
}

// nat64 and sixToFour are IPv6 forms that carry an IPv4 address a gateway may
// forward to: NAT64 (the last 32 bits) and 6to4 (bits 16 to 48).
var nat64, sixToFour = netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("2002::/16")

// embeddedIPv4 is the IPv4 address an IPv6 one carries, if any.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// Policy says which addresses outbound calls may reach.
type Policy struct {
	// AllowLoopback admits 127.0.0.0/8 and ::1: development only (Azurite,
	// the demo receiver).
	AllowLoopback bool
	// AllowPrefixes admits otherwise refused ranges, such as the subnet of
	// the private endpoints of guarded apps' storage.
	AllowPrefixes []netip.Prefix
	// RootCAs replaces the system's roots (tests); nil: the system's.
	RootCAs *x509.CertPool
	// DialTimeout bounds one connect; default 5s.
	DialTimeout time.Duration
}

// Allowed reports whether a connection to addr may be made, and why not.
func (p Policy) Allowed(addr netip.Addr) error {
	addr = addr.Unmap()
	for _, pre := range p.AllowPrefixes {
		if pre.Contains(addr) {
			return nil
		}
	}
	var kind string
	switch {
	case !addr.IsValid():
		kind = "no address"
	case addr.IsLoopback():
		if p.AllowLoopback {
			return nil
		}
		kind = "loopback"
	case addr.IsUnspecified():
		kind = "unspecified"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		kind = "link-local (instance metadata lives there)"
	case addr.IsPrivate():
		kind = "private"
	case cgnat.Contains(addr):
		kind = "shared (CGNAT)"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		kind = "multicast"
	default:
		for _, r := range reserved {
			if r.prefix.Contains(addr) {
				return &RefusedError{Addr: addr, Kind: r.kind}
			}
		}
		if v4, ok := embeddedIPv4(addr); ok {
			if err := p.Allowed(v4); err != nil {
				return &RefusedError{Addr: addr, Kind: "an IPv6 form of " + v4.String() + ", which " + err.(*RefusedError).Kind}
			}
		}
		return nil
	}
	return &RefusedError{Addr: addr, Kind: kind}
}

// RefusedError is a connection the policy did not allow, with why.
type RefusedError struct {
	Addr netip.Addr
	Kind string // loopback, private...
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("egress: address not allowed: %s is %s", e.Addr, e.Kind)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Dialer dials as net.Dialer does, checking each address it is about to
// connect to.
func (p Policy) Dialer() *net.Dialer {
	timeout := p.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &net.Dialer{
		Timeout: timeout,
		// Control runs after resolution, on the very address connected to.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %q is not an address", ErrRefused, address)
			}
			return p.Allowed(ap.Addr())
		},
	}
}

// Transport is an HTTP transport that dials only through the policy, with
// no proxy and TLS 1.2 or later.
func (p Policy) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           p.Dialer().DialContext,
		TLSClientConfig:       p.TLSConfig(),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
}

// TLSConfig is the TLS configuration of every guarded call.
func (p Policy) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.RootCAs}
}

// Client is an HTTP client over Transport that never follows a redirect:
// a redirect would take the request, and for chat channels their secret
// URL's answer, somewhere the operator did not name.
func (p Policy) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     p.Transport(),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Transporter carries SDK requests (azblob's Transport option) through a
// policy; redirects are not followed, as in Client.
type Transporter struct{ client *http.Client }

// Do implements azcore's policy.Transporter.
func (t *Transporter) Do(req *http.Request) (*http.Response, error) {
	return t.client.Do(req)
}

// Transporter is the policy as an SDK transport; the SDK's own deadlines
// and the caller's context bound each call.
func (p Policy) Transporter() *Transporter {
	return &Transporter{client: p.Client(0)}
}
