package auth

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// An unknown name is checked against a hash as dear as the dearest
// user's, so it takes as long as a wrong password for that user: a hash
// of the default cost beside users hashed dearer would tell names apart.
func TestAnUnknownNameCostsAsMuchAsTheDearestUser(t *testing.T) {
	hash := func(cost int) []byte {
		h, err := bcrypt.GenerateFromPassword([]byte("pw"), cost)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	l := NewLocalUsers([]LocalUser{{Name: "a", PasswordHash: hash(bcrypt.MinCost)}, {Name: "b", PasswordHash: hash(bcrypt.MinCost + 2)}, {Name: "c", PasswordHash: []byte("not a hash")}})
	if got, err := bcrypt.Cost(l.dummy); err != nil || got != bcrypt.MinCost+2 {
		t.Errorf("the unknown-name hash costs %d (%v), want the dearest user's %d", got, err, bcrypt.MinCost+2)
	}
	if _, err := l.Authenticate("nobody", "pw"); err != ErrBadCredentials {
		t.Errorf("an unknown name: %v, want ErrBadCredentials", err)
	}
	// A hash claiming a cost of 31 is made at start-up at most at 16.
	claims31 := strings.Replace(string(hash(bcrypt.MinCost)), "$04$", "$31$", 1)
	if got := dearest([]LocalUser{{Name: "d", PasswordHash: []byte(claims31)}}); got != maxDummyCost {
		t.Errorf("a hash claiming cost 31 sets the unknown-name cost to %d, want at most %d", got, maxDummyCost)
	}
	if got, _ := bcrypt.Cost(NewLocalUsers(nil).dummy); got != bcrypt.DefaultCost {
		t.Errorf("with no users the unknown-name hash costs %d, want bcrypt's default %d", got, bcrypt.DefaultCost)
	}
}
