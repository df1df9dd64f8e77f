package alerts_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
)

var (
	t0   = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	key1 = []byte(strings.Repeat("k", 32))
	key2 = []byte(strings.Repeat("q", 32))
)

func signer(t testing.TB, current string) *alerts.Signer {
	s, err := alerts.NewSigner(current, map[string][]byte{"k1": key1, "k2": key2})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func link() alerts.Link {
	return alerts.Link{Circuit: "orders/Process", Episode: 3, Action: "resume", Recipient: "ops@example.com", Expires: t0.Add(72 * time.Hour)}
}

func TestLinksVerifyUntilTheyExpire(t *testing.T) {
	s := signer(t, "k1")
	tok := s.Sign(link())
	got, err := s.Verify(tok, t0.Add(72*time.Hour-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got.Circuit != "orders/Process" || got.Episode != 3 || got.Action != "resume" || got.Recipient != "ops@example.com" || got.KeyID != "k1" || !got.Expires.Equal(t0.Add(72*time.Hour)) {
		t.Errorf("link = %+v", got)
	}
	if _, err := s.Verify(tok, t0.Add(72*time.Hour)); !errors.Is(err, alerts.ErrExpired) {
		t.Errorf("at expiry: %v, want ErrExpired", err)
	}
}

func TestKeyRotation(t *testing.T) {
	old := signer(t, "k1").Sign(link())
	rotated := signer(t, "k2")
	if _, err := rotated.Verify(old, t0); err != nil {
		t.Errorf("a link signed with the previous key stopped working: %v", err)
	}
	if got, _ := rotated.Verify(rotated.Sign(link()), t0); got.KeyID != "k2" {
		t.Errorf("new links use key %q, want k2", got.KeyID)
	}
	retired, _ := alerts.NewSigner("k2", map[string][]byte{"k2": key2})
	if _, err := retired.Verify(old, t0); !errors.Is(err, alerts.ErrForged) {
		t.Errorf("a link of a retired key: %v, want ErrForged", err)
	}
}

func TestTamperingIsRejected(t *testing.T) {
	s := signer(t, "k1")
	tok := s.Sign(link())
	payload, sig, _ := strings.Cut(tok, ".")
	data, _ := base64.RawURLEncoding.DecodeString(payload)
	reencode := func(from, to string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(data), from, to, 1))) + "." + sig
	}
	other, _ := alerts.NewSigner("k1", map[string][]byte{"k1": []byte(strings.Repeat("x", 32))})
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"another episode", reencode(`"e":3`, `"e":4`), alerts.ErrForged},
		{"another circuit", reencode("orders/Process", "orders/Other"), alerts.ErrForged},
		{"later expiry", reencode(`"x":`, `"x":9`), alerts.ErrForged},
		{"another recipient", reencode("ops@", "eve@"), alerts.ErrForged},
		{"unknown key id", reencode(`"k":"k1"`, `"k":"k9"`), alerts.ErrForged},
		{"signature of another Fusebox", payload + "." + strings.SplitN(other.Sign(link()), ".", 2)[1], alerts.ErrForged},
		{"truncated signature", tok[:len(tok)-1], alerts.ErrForged},
		{"no signature", payload, alerts.ErrMalformed},
		{"empty", "", alerts.ErrMalformed},
		{"not base64", "!!!.???", alerts.ErrMalformed},
		{"huge", strings.Repeat("a", 5000) + "." + sig, alerts.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Verify(tt.token, t0); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzVerify checks that no input makes Verify panic, and that whatever it
// accepts was signed here: any accepted token signs back to itself.
func FuzzVerify(f *testing.F) {
	s := signer(f, "k1")
	f.Add(s.Sign(link()))
	f.Add("")
	f.Add(".")
	f.Add("eyJjIjoiIn0.AAAA")
	f.Fuzz(func(t *testing.T, token string) {
		l, err := s.Verify(token, t0)
		if err != nil {
			return
		}
		// Whatever is accepted must be exactly what this signer makes for
		// that link: another encoding of an accepted payload would mean
		// the signature does not pin the bytes.
		if again := signer(t, l.KeyID).Sign(l); again != token {
			t.Errorf("accepted %q, which is not the signer's own encoding %q", token, again)
		}
	})
}
