package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Scopes Fusebox asks tokens for.
const (
	ScopeStorage = "https://storage.azure.com/.default"
	// azeventhubs asks with a double slash; both forms name one resource.
	ScopeEventHubs      = "https://eventhubs.azure.net//.default"
	scopeEventHubsPlain = "https://eventhubs.azure.net/.default"
)

// ScopesARM are Azure Resource Manager's scopes in each cloud, as the
// SDK's ARM clients ask for them (the audience and "/.default").
var ScopesARM = []string{
	"https://management.core.windows.net//.default",
	"https://management.core.usgovcloudapi.net//.default",
	"https://management.core.chinacloudapi.cn//.default",
}

// ErrScope is a token asked for a scope the credential was not made for:
// most likely a server's challenge naming another resource to harvest a
// token for it.
var ErrScope = errors.New("egress: token scope not allowed")

// Scoped is a credential that asks its inner credential only for the given
// scopes. Azure SDK clients take the scope of a token from a server's 401
// challenge; wrapping the credential makes what a server says irrelevant.
type Scoped struct {
	inner  azcore.TokenCredential
	scopes map[string]bool
}

// Scope wraps cred so it gives tokens only for scopes. The plain and the
// double-slash form of a scope are the same resource, and both are allowed.
func Scope(cred azcore.TokenCredential, scopes ...string) *Scoped {
	s := &Scoped{inner: cred, scopes: map[string]bool{}}
	for _, sc := range scopes {
		s.scopes[sc] = true
		if sc == ScopeEventHubs {
			s.scopes[scopeEventHubsPlain] = true
		}
	}
	return s
}

// ForStorageAndEventHubs is the credential of host insight: blob and Event
// Hubs reads, nothing else.
func ForStorageAndEventHubs(cred azcore.TokenCredential) *Scoped {
	return Scope(cred, ScopeStorage, ScopeEventHubs)
}

// GetToken implements azcore.TokenCredential.
func (s *Scoped) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	if len(opts.Scopes) == 0 {
		return azcore.AccessToken{}, fmt.Errorf("%w: no scope named", ErrScope)
	}
	for _, sc := range opts.Scopes {
		if !s.scopes[sc] {
			return azcore.AccessToken{}, fmt.Errorf("%w: %q", ErrScope, sc)
		}
	}
	return s.inner.GetToken(ctx, opts)
}

// Describe says what went wrong with a call to host in words fit for a page
// or a log: a class of failure, never the text of the error, which can
// carry what the remote server answered or a signed URL.
func Describe(host string, err error) string {
	return host + ": " + Class(err)
}

// Class is the kind of failure err is.
func Class(err error) string {
	var (
		re      *azcore.ResponseError
		ne      net.Error
		dnsErr  *net.DNSError
		opErr   *net.OpError
		unknown x509.UnknownAuthorityError
		badHost x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		alert   tls.AlertError
		record  tls.RecordHeaderError
		refused *RefusedError
		classed interface{ Class() string }
	)
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &classed):
		// An error that names its own class (a table's answer).
		return classed.Class()
	case errors.As(err, &refused):
		return "refused: the address is not one Fusebox may call (" + refused.Kind + ")"
	case errors.Is(err, ErrEndpoint):
		return "refused: not an endpoint Fusebox may call"
	case errors.Is(err, ErrScope):
		return "refused: the server asked for a token of another scope"
	case errors.As(err, &re):
		switch re.StatusCode {
		case 401, 403:
			return fmt.Sprintf("access denied (HTTP %d)", re.StatusCode)
		case 404:
			return "not found (HTTP 404)"
		}
		return fmt.Sprintf("answered HTTP %d", re.StatusCode)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &unknown), errors.As(err, &badHost), errors.As(err, &invalid), errors.As(err, &verify),
		errors.As(err, &alert), errors.As(err, &record):
		return "TLS failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dnsErr):
		return "the name does not resolve"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "could not connect"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return "the connection failed"
	}
	return "failed"
}
