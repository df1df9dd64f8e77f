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
	"os"
	"strings"
	"testing"
	"time"

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
