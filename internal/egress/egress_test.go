package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/fusebox/fusebox/internal/egress"
)

func TestPolicyRefusesAddressesInsideTheNetwork(t *testing.T) {
	strict := egress.Policy{}
	for addr, refused := range map[string]bool{
		"127.0.0.1":          true,
		"127.9.9.9":          true,
		"::1":                true,
		"::ffff:127.0.0.1":   true, // v4-mapped loopback
		"10.1.2.3":           true,
		"172.16.0.1":         true,
		"192.168.1.1":        true,
		"169.254.169.254":    true, // instance metadata (IMDS)
		"100.64.0.1":         true, // CGNAT
		"0.0.0.0":            true,
		"::":                 true,
		"fe80::1":            true,
		"fd00::1":            true,
		"224.0.0.1":          true,
		"168.63.129.16":      true, // Azure's WireServer and DNS
		"0.1.2.3":            true,
		"192.0.0.8":          true,
		"198.18.0.1":         true,
		"240.0.0.1":          true,
		"255.255.255.255":    true,
		"64:ff9b::a9fe:a9fe": true, // NAT64 of 169.254.169.254
		"64:ff9b::a00:1":     true, // NAT64 of 10.0.0.1
		"2002:a9fe:a9fe::1":  true, // 6to4 of 169.254.169.254
		"2002:7f00:1::1":     true, // 6to4 of 127.0.0.1
		"64:ff9b:1::1":       true,
		"64:ff9b::143c:101":  false, // NAT64 of 20.60.1.1
		"20.60.1.1":          false, // an Azure public address
		"2603:1030::1":       false,
	} {
		err := strict.Allowed(netip.MustParseAddr(addr))
		if (err != nil) != refused {
			t.Errorf("Allowed(%s) = %v, want refused %v", addr, err, refused)
		}
		if err != nil && !errors.Is(err, egress.ErrRefused) {
			t.Errorf("Allowed(%s) = %v, not ErrRefused", addr, err)
		}
	}
	dev := egress.Policy{AllowLoopback: true}
	if err := dev.Allowed(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("development refuses loopback: %v", err)
	}
	if err := dev.Allowed(netip.MustParseAddr("169.254.169.254")); err == nil {
		t.Error("development admits the metadata address")
	}
	endpoints := egress.Policy{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/24")}}
	if err := endpoints.Allowed(netip.MustParseAddr("10.20.0.7")); err != nil {
		t.Errorf("a listed private range is refused: %v", err)
	}
	if err := endpoints.Allowed(netip.MustParseAddr("10.21.0.7")); err == nil {
		t.Error("an unlisted private address is admitted")
	}
}

// The check is made on the address connected to, after resolution: a
// name that resolves to loopback is refused, though the name itself says
// nothing (DNS rebinding works the same way).
func TestDialTimeRefusalOfANameThatResolvesToLoopback(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	byName := "http://localhost:" + port + "/"

	_, err := egress.Policy{}.Client(time.Second).Get(byName)
	if !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("GET %s = %v, want ErrRefused", byName, err)
	}
	if got := egress.Class(err); !strings.Contains(got, "loopback") {
		t.Errorf("Class = %q, want it to say loopback", got)
	}
	if hits != 0 {
		t.Fatalf("the server was reached %d times", hits)
	}
	// The same call in development reaches it: the refusal was the policy's.
	resp, err := egress.Policy{AllowLoopback: true}.Client(time.Second).Get(byName)
	if err != nil {
		t.Fatalf("development: %v", err)
	}
	resp.Body.Close()
	if hits != 1 {
		t.Errorf("development: server reached %d times, want 1", hits)
	}
}

func TestClientFollowsNoRedirect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/metadata/identity/oauth2/token", http.StatusFound)
	}))
	defer srv.Close()
	resp, err := egress.Policy{AllowLoopback: true}.Client(time.Second).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want the 302 itself", resp.StatusCode)
	}
}

type recorder struct{ asked [][]string }

func (r *recorder) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	r.asked = append(r.asked, o.Scopes)
	return azcore.AccessToken{Token: "token-for-" + strings.Join(o.Scopes, ","), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestScopedCredentialAsksOnlyForItsScopes(t *testing.T) {
	inner := &recorder{}
	cred := egress.ForStorageAndEventHubs(inner)
	for _, sc := range []string{egress.ScopeStorage, egress.ScopeEventHubs, "https://eventhubs.azure.net/.default"} {
		if _, err := cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{sc}}); err != nil {
			t.Errorf("%s: %v", sc, err)
		}
	}
	for _, sc := range [][]string{{"https://management.azure.com/.default"}, {egress.ScopesARM[0]}, {"https://vault.azure.net/.default"},
		{egress.ScopeStorage, "https://management.azure.com/.default"}, {}} {
		tok, err := cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: sc})
		if !errors.Is(err, egress.ErrScope) || tok.Token != "" {
			t.Errorf("%v: token %q, err %v; want ErrScope and no token", sc, tok.Token, err)
		}
	}
	if len(inner.asked) != 3 {
		t.Errorf("the identity was asked %d times (%v), want only the 3 allowed", len(inner.asked), inner.asked)
	}
	// The switches' credential gives ARM tokens (the fake-server ARM tests
	// run through it) and nothing a host-storage challenge could ask for.
	arm := egress.Scope(&recorder{}, egress.ScopesARM...)
	if _, err := arm.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{egress.ScopesARM[0]}}); err != nil {
		t.Errorf("ARM scope: %v", err)
	}
	for _, sc := range []string{egress.ScopeStorage, egress.ScopeEventHubs} {
		if _, err := arm.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{sc}}); !errors.Is(err, egress.ErrScope) {
			t.Errorf("the ARM credential gives a %s token: %v", sc, err)
		}
	}
}

func TestEndpointsAdmitOnlyAzureServices(t *testing.T) {
	prod := egress.Endpoints{Cloud: egress.Clouds["public"]}
	dev := egress.Endpoints{Cloud: egress.Clouds["public"], Development: true}
	for _, tc := range []struct {
		setting   string
		prod, dev bool
	}{
		{"https://orders.blob.core.windows.net", true, true},
		{"https://orders.blob.core.windows.net/", true, true},
		{"https://ORDERS.blob.core.windows.net:443", true, true},
		{"http://orders.blob.core.windows.net", false, false},
		{"https://orders.blob.core.windows.net:8443", false, false},
		{"https://evil.example/", false, false},
		{"https://orders.blob.core.windows.net.evil.example/", false, false},
		{"https://a.b.blob.core.windows.net/", false, false},
		{"https://blob.core.windows.net/", false, false},
		{"https://user@orders.blob.core.windows.net/", false, false},
		{"https://orders.blob.core.usgovcloudapi.net/", false, false},
		{"https://127.0.0.1/", false, true},
		{"http://127.0.0.1:10000/devstoreaccount1", false, true},
		{"https://10.0.0.4/", false, false},
	} {
		if err := prod.CheckBlobURL(tc.setting); (err == nil) != tc.prod {
			t.Errorf("production CheckBlobURL(%q) = %v, want allowed %v", tc.setting, err, tc.prod)
		}
		if err := dev.CheckBlobURL(tc.setting); (err == nil) != tc.dev {
			t.Errorf("development CheckBlobURL(%q) = %v, want allowed %v", tc.setting, err, tc.dev)
		}
	}
	for _, tc := range []struct {
		host      string
		prod, dev bool
	}{
		{"orders.servicebus.windows.net", true, true},
		{"orders.servicebus.windows.net:5671", true, true},
		{"orders.servicebus.windows.net:80", false, false},
		{"evil.example", false, false},
		{"orders.servicebus.windows.net.evil.example", false, false},
		{"127.0.0.1:7073", false, true},
		{"localhost", false, true},
		{"10.0.0.9", false, false},
	} {
		if err := prod.CheckNamespace(tc.host); (err == nil) != tc.prod {
			t.Errorf("production CheckNamespace(%q) = %v, want allowed %v", tc.host, err, tc.prod)
		}
		if err := dev.CheckNamespace(tc.host); (err == nil) != tc.dev {
			t.Errorf("development CheckNamespace(%q) = %v, want allowed %v", tc.host, err, tc.dev)
		}
	}
	gov := egress.Endpoints{Cloud: egress.Clouds["usgov"]}
	if err := gov.CheckBlobURL("https://orders.blob.core.usgovcloudapi.net/"); err != nil {
		t.Errorf("US Government cloud: %v", err)
	}
}

// What a server answered never reaches the words: only a class.
func TestClassSaysNothingTheServerSaid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	resp := &http.Response{StatusCode: 403, Status: "403 SECRET-STATUS", Header: http.Header{"X-Ms-Error-Code": {"SECRET-CODE"}},
		Body: http.NoBody, Request: httptest.NewRequest(http.MethodGet, srv.URL+"/c/b?sig=SECRET-SIG", nil)}
	err := runtime.NewResponseError(resp)
	got := egress.Describe("orders.blob.core.windows.net", err)
	if got != "orders.blob.core.windows.net: access denied (HTTP 403)" {
		t.Errorf("Describe = %q", got)
	}
	for _, secret := range []string{"SECRET", "sig="} {
		if strings.Contains(got, secret) {
			t.Errorf("Describe carries %q: %s", secret, got)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if got := egress.Class(ctx.Err()); got != "timed out" {
		t.Errorf("Class(deadline) = %q", got)
	}
}
