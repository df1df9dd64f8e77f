// Package testenv gives integration tests the real services they run
// against: the Azurite instance that `make test` starts.
//
// Tests never skip when a service is missing: they fail with a message that
// says how to provide it, so a green run always means the tests ran.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fusebox/fusebox/internal/tablestore"
)

// StorageEnv names the variable holding the test Azurite's connection string.
const StorageEnv = "FUSEBOX_TEST_STORAGE_CONNECTION_STRING"

// ConnectionString returns the test Azurite's connection string.
func ConnectionString(t testing.TB) string {
	t.Helper()
	cs := os.Getenv(StorageEnv)
	if cs == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts Azurite, or start it with `scripts/azurite.sh` and export the connection string it prints", StorageEnv)
	}
	return cs
}

// Prefix returns a fresh table prefix, so tests sharing one Azurite never
// see each other's rows.
func Prefix(t testing.TB) string {
	t.Helper()
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "t" + hex.EncodeToString(b)
}

// Storage connects to the test Azurite under a fresh prefix and deletes the
// test's tables when it ends.
func Storage(t testing.TB) (*tablestore.Service, string) {
	t.Helper()
	prefix := Prefix(t)
	svc, err := tablestore.NewFromConnectionString(ConnectionString(t), tablestore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		names, err := svc.ListTables(ctx)
		if err != nil {
			t.Logf("cleanup: list tables: %v", err)
			return
		}
		for _, n := range names {
			if err := svc.DeleteTable(ctx, strings.TrimPrefix(n, prefix)); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})
	return svc, prefix
}

// StuckLock leaves a blob in container leased for ever, as function code
// that took a per-key lock and died would: a fresh blob named
// locks-by-code/{a fresh prefix}/key, so tests never share one. Its
// lease is broken when the test ends.
func StuckLock(t testing.TB, container, key string) (string, *blob.Client) {
	t.Helper()
	bc, err := azblob.NewClientFromConnectionString(ConnectionString(t), &azblob.ClientOptions{ClientOptions: Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	name := "locks-by-code/" + Prefix(t) + "/" + key
	if _, err := bc.UploadBuffer(t.Context(), container, name, nil, nil); err != nil {
		t.Fatal(err)
	}
	b := bc.ServiceClient().NewContainerClient(container).NewBlobClient(name)
	lc, err := lease.NewBlobClient(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(t.Context(), -1, nil); err != nil { // infinite: nobody renews or releases it
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = lc.BreakLease(context.Background(), nil) })
	return name, b
}

// GrepLines keeps the lines of s that hold sub, for log assertions that
// show only what matters when they fail.
func GrepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Bounded is the client options of a test's own storage clients: every
// try ends within 10 s, so a stalled Azurite fails a test instead of
// holding it until go test's timeout.
func Bounded() azcore.ClientOptions {
	return azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: 3, TryTimeout: 10 * time.Second}}
}
