package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Cloud names the Azure service suffixes endpoints must sit under.
type Cloud struct {
	Name      string
	Storage   string // blob endpoints: <account>.blob.<Storage>
	EventHubs string // namespaces: <namespace>.<EventHubs>
}

// Clouds are the Azure clouds Fusebox knows, by FUSEBOX_AZURE_CLOUD's value.
var Clouds = map[string]Cloud{
	"public": {Name: "public", Storage: "core.windows.net", EventHubs: "servicebus.windows.net"},
	"usgov":  {Name: "usgov", Storage: "core.usgovcloudapi.net", EventHubs: "servicebus.usgovcloudapi.net"},
	"china":  {Name: "china", Storage: "core.chinacloudapi.cn", EventHubs: "servicebus.chinacloudapi.cn"},
}

// Endpoints decides which storage and Event Hubs endpoints of guarded apps
// Fusebox may read. An endpoint an operator typed is bad input until it
// passes here: a foreign host would receive a token or be probed with
// Fusebox's network position.
type Endpoints struct {
	Cloud Cloud // zero: Azure's public cloud
	// Development admits loopback endpoints over plain HTTP or AMQP
	// (Azurite, the Event Hubs emulator, the demo hub).
	Development bool
}

// ErrEndpoint is an endpoint outside the allowed suffixes.
var ErrEndpoint = errors.New("egress: endpoint not allowed")

// EndpointError is an endpoint refused, with why, in words for the form
// that named it.
type EndpointError struct{ Reason string }

func (e *EndpointError) Error() string { return ErrEndpoint.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrEndpoint) true.
func (e *EndpointError) Is(target error) bool { return target == ErrEndpoint }

func refuse(format string, args ...any) error {
	return &EndpointError{Reason: fmt.Sprintf(format, args...)}
}

func (e Endpoints) cloud() Cloud {
	if e.Cloud.Storage == "" {
		return Clouds["public"]
	}
	return e.Cloud
}

func (e Endpoints) loopback(host string) bool {
	if !e.Development {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// under reports whether host is a single label below suffix.
func under(host, suffix string) bool {
	host, suffix = strings.ToLower(host), "."+strings.ToLower(suffix)
	label, ok := strings.CutSuffix(host, suffix)
	return ok && label != "" && !strings.ContainsAny(label, ".:[]")
}

// CheckBlobURL checks an account's blob endpoint, such as
// https://orders.blob.core.windows.net/ (for a connection string, the
// endpoint its azblob client calls).
func (e Endpoints) CheckBlobURL(raw string) error { return e.checkStorageURL(raw, "blob") }

// CheckQueueURL checks an account's queue endpoint, such as
// https://orders.queue.core.windows.net/, as CheckBlobURL does the blob's.
func (e Endpoints) CheckQueueURL(raw string) error { return e.checkStorageURL(raw, "queue") }

func (e Endpoints) checkStorageURL(raw, service string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return refuse("the %s endpoint is not a URL such as https://<account>.%s.%s", service, service, e.cloud().Storage)
	}
	host := u.Hostname()
	if e.loopback(host) {
		return nil
	}
	if u.Scheme != "https" {
		return refuse("the %s endpoint must use https", service)
	}
	if p := u.Port(); p != "" && p != "443" {
		return refuse("the %s endpoint must use port 443", service)
	}
	if under(host, service+"."+e.cloud().Storage) {
		return nil
	}
	return refuse("%s is not a %s endpoint of Azure (%s cloud: <account>.%s.%s)", host, service, e.cloud().Name, service, e.cloud().Storage)
}

// CheckNamespace checks an Event Hubs namespace's host name (or
// host:port, for loopback in development).
func (e Endpoints) CheckNamespace(host string) error {
	h := host
	if hh, port, err := net.SplitHostPort(host); err == nil {
		if e.loopback(hh) {
			return nil
		}
		if port != "5671" && port != "443" {
			return refuse("the Event Hubs namespace must use port 5671 or 443")
		}
		h = hh
	}
	if e.loopback(h) || under(h, e.cloud().EventHubs) {
		return nil
	}
	return refuse("%s is not an Event Hubs namespace of Azure (%s cloud: <namespace>.%s)", h, e.cloud().Name, e.cloud().EventHubs)
}

// CheckResolved resolves host and checks every address against the
// policy: for clients (AMQP) whose dialer cannot be replaced, a check just
// before they connect.
func (p Policy) CheckResolved(ctx context.Context, host string) error {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.Allowed(a)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := p.Allowed(a); err != nil {
			return err
		}
	}
	return nil
}
