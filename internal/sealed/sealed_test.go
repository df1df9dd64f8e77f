package sealed_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/sealed"
)

func box(t *testing.T, keys ...sealed.Key) *sealed.Box {
	t.Helper()
	b, err := sealed.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	k1 = sealed.Key{ID: "k1", Secret: []byte("first-key-0123456789abcdef0123456789")}
	k2 = sealed.Key{ID: "k2", Secret: []byte("second-key-0123456789abcdef012345678")}
)

func TestSealedValuesOpenOnlyWhereTheyWereSealed(t *testing.T) {
	b := box(t, k1)
	conn := "DefaultEndpointsProtocol=https;AccountName=orders;AccountKey=SECRETKEY"
	v := b.Seal(conn, "Apps/orders/HostStorage")
	if !strings.HasPrefix(v, "sealed:v1:k1:") || strings.Contains(v, "SECRETKEY") || strings.Contains(v, "orders") {
		t.Fatalf("sealed value %q", v)
	}
	if v2 := b.Seal(conn, "Apps/orders/HostStorage"); v2 == v {
		t.Error("two seals of one value are equal: the nonce is not fresh")
	}
	got, plain, err := b.Open(v, "Apps/orders/HostStorage")
	if err != nil || plain || got != conn {
		t.Fatalf("Open = %q, %v, %v", got, plain, err)
	}
	for where, value := range map[string]string{
		"Apps/payments/HostStorage": v,                                 // copied to another row
		"Apps/orders/EventHubs":     v,                                 // or another field
		"Apps/orders/HostStorage ":  v,                                 // anything else
		"Apps/orders/HostStorage":   v[:len(v)-2] + "AA",               // tampered
		"Apps/orders/HostStorage/":  strings.Replace(v, "k1", "k9", 1), // an unknown key
	} {
		if _, _, err := b.Open(value, where); !errors.Is(err, sealed.ErrOpen) {
			t.Errorf("Open at %q = %v, want ErrOpen", where, err)
		}
	}
	if got, plain, err := b.Open("plain text", "x"); err != nil || !plain || got != "plain text" {
		t.Errorf("a plaintext value: %q, %v, %v", got, plain, err)
	}
}

// Keys rotate: a box whose first key is new seals with it and still opens
// what the old one sealed, and says that value should be sealed again.
func TestKeysRotate(t *testing.T) {
	old := box(t, k1)
	v := old.Seal("whsec_abc", "Channels/hook/Secret")
	rotated := box(t, k2, k1)
	if got, _, err := rotated.Open(v, "Channels/hook/Secret"); err != nil || got != "whsec_abc" {
		t.Fatalf("the rotated box opens %q, %v", got, err)
	}
	if !rotated.Stale(v) || rotated.Stale(rotated.Seal("x", "y")) || !rotated.Stale("plain") || rotated.Stale("") {
		t.Error("Stale does not tell old and plaintext values from current ones")
	}
	if _, _, err := box(t, k2).Open(v, "Channels/hook/Secret"); !errors.Is(err, sealed.ErrOpen) {
		t.Errorf("a box without the old key opens its value: %v", err)
	}
}
