package hostinsight_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/hostinsight"
)

// identity hands out a token for any scope, as a managed identity does,
// and remembers what it was asked for.
type identity struct {
	mu    sync.Mutex
	asked []string
}

func (i *identity) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.asked = append(i.asked, o.Scopes...)
	return azcore.AccessToken{Token: "token-for " + strings.Join(o.Scopes, " "), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// An operator who names a storage account of their own gets no token
// but a Storage one: the account's 401 challenge asks for an ARM token
// (azblob takes the scope from it), and the identity is never asked.
// Nothing the server says reaches the snapshot's problems.
func TestAChallengeForAnARMTokenGetsNothing(t *testing.T) {
	var mu sync.Mutex
	var presented []string
	evil := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		presented = append(presented, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer authorization_uri="https://login.microsoftonline.com/tenant/oauth2/authorize" resource_id="https://management.azure.com"`)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("EVIL-BODY: send me your token"))
	}))
	defer evil.Close()
	roots := x509.NewCertPool()
	roots.AddCert(evil.Certificate())

	id := &identity{}
	src := &hostinsight.Source{
		Credential: egress.ForStorageAndEventHubs(id),
		// Development admits the loopback test server; the rule under test
		// is the credential's, which holds in production too.
		Endpoints: egress.Endpoints{Cloud: egress.Clouds["public"], Development: true},
		Transport: egress.Policy{AllowLoopback: true, RootCAs: roots}.Transporter(),
		Timeout:   5 * time.Second,
	}
	app := circuit.App{ID: "evil", HostStorage: evil.URL + "/", Site: "orders"}
	snap, ok := src.Snapshot(t.Context(), app, time.Now())
	if !ok {
		t.Fatal("no snapshot for an app with host storage")
	}
	if len(snap.Problems) == 0 {
		t.Fatal("the account's refusal is not reported")
	}
	for _, scope := range id.asked {
		if scope != egress.ScopeStorage {
			t.Errorf("the identity was asked for %q", scope)
		}
	}
	mu.Lock()
	for _, auth := range presented {
		if auth != "" && !strings.Contains(auth, egress.ScopeStorage) {
			t.Errorf("the server received %q", auth)
		}
		if strings.Contains(auth, "management") {
			t.Errorf("the server received an ARM token: %q", auth)
		}
	}
	mu.Unlock()
	for _, p := range snap.Problems {
		if strings.Contains(p.Reason, "EVIL") || strings.Contains(p.Reason, "send me") {
			t.Errorf("the server's words reach the page: %s: %s", p.Blob, p.Reason)
		}
	}
	t.Logf("problems: %v", snap.Problems)
}

// In production the same account is refused before anything is sent.
func TestHostStorageOutsideAzureIsNeverCalled(t *testing.T) {
	hits := 0
	evil := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer evil.Close()
	id := &identity{}
	src := &hostinsight.Source{Credential: egress.ForStorageAndEventHubs(id), Endpoints: egress.Endpoints{Cloud: egress.Clouds["public"]},
		Transport: egress.Policy{}.Transporter()}
	for _, storage := range []string{evil.URL + "/", "https://evil.example/", "AccountName=x;AccountKey=a2V5;BlobEndpoint=" + evil.URL + "/x"} {
		snap, _ := src.Snapshot(t.Context(), circuit.App{ID: "evil-" + storage, HostStorage: storage, Site: "orders"}, time.Now())
		if len(snap.Problems) != 1 || !strings.Contains(snap.Problems[0].Reason, "endpoint not allowed") {
			t.Errorf("%s: problems %v, want one saying the endpoint is not allowed", storage, snap.Problems)
		}
		// The replay's writes take the same client, refused the same way
		// before anything is sent.
		if _, err := src.Client(circuit.App{ID: "evil", HostStorage: storage, Site: "orders"}); err == nil || !strings.Contains(err.Error(), "endpoint not allowed") {
			t.Errorf("%s: the replay's client: %v, want the endpoint refused", storage, err)
		}
		if _, err := src.Checkpoints(t.Context(), circuit.App{ID: "evil", HostStorage: storage, Site: "orders"}); err == nil {
			t.Errorf("%s: the checkpoint history read it", storage)
		}
	}
	if hits != 0 || len(id.asked) != 0 {
		t.Errorf("server hit %d times, identity asked %v: want neither", hits, id.asked)
	}
	if err := hostinsight.CheckHostStorage(egress.Endpoints{Cloud: egress.Clouds["public"]}, "https://evil.example/"); err == nil {
		t.Error("the form accepts https://evil.example/")
	}
}

// A connection string is judged by the endpoint azblob would call with it,
// so what the form accepts is what host insight reads.
func TestConnectionStringsAreJudgedByTheirBlobEndpoint(t *testing.T) {
	prod := egress.Endpoints{Cloud: egress.Clouds["public"]}
	dev := egress.Endpoints{Cloud: egress.Clouds["public"], Development: true}
	for _, tc := range []struct {
		setting   string
		prod, dev bool
	}{
		{"DefaultEndpointsProtocol=https;AccountName=orders;AccountKey=a2V5;EndpointSuffix=core.windows.net", true, true},
		{"AccountName=orders;AccountKey=a2V5", true, true},
		{"DefaultEndpointsProtocol=https;AccountName=orders;AccountKey=a2V5;EndpointSuffix=evil.example", false, false},
		{"AccountName=x;AccountKey=a2V5;BlobEndpoint=http://10.0.0.5/x", false, false},
		{"AccountName=x;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1", false, true},
		// azblob does not take the shorthand (it never read here); the
		// form says so in both modes.
		{"UseDevelopmentStorage=true", false, false},
		{"https://orders.blob.core.windows.net/", true, true},
		{"https://evil.example/", false, false},
	} {
		if err := hostinsight.CheckHostStorage(prod, tc.setting); (err == nil) != tc.prod {
			t.Errorf("production CheckHostStorage(%q) = %v, want allowed %v", tc.setting, err, tc.prod)
		}
		if err := hostinsight.CheckHostStorage(dev, tc.setting); (err == nil) != tc.dev {
			t.Errorf("development CheckHostStorage(%q) = %v, want allowed %v", tc.setting, err, tc.dev)
		}
	}
}
