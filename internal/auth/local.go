package auth

import (
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// LocalUser is a user defined in configuration.
type LocalUser struct {
	Name         string
	Role         Role            // on every app
	Teams        map[string]Role // on teams' apps
	PasswordHash []byte          // bcrypt
}

// LocalUsers checks passwords of users defined in configuration.
type LocalUsers struct {
	users map[string]LocalUser // by lower-case name
	dummy []byte
}

// NewLocalUsers indexes users by case-insensitive name.
func NewLocalUsers(users []LocalUser) *LocalUsers {
	l := &LocalUsers{users: make(map[string]LocalUser, len(users))}
	for _, u := range users {
		l.users[strings.ToLower(u.Name)] = u
	}
	// Checking a password against this hash when the name is unknown makes
	// unknown names cost as much as wrong passwords, so timing does not
	// reveal which names exist: its cost is the dearest of the users'.
	l.dummy, _ = bcrypt.GenerateFromPassword([]byte("no such user"), dearest(users))
	return l
}

// dearest is the highest bcrypt cost among the users' hashes, at most
// maxDummyCost, or bcrypt's default when none can be read.
func dearest(users []LocalUser) int {
	cost := 0
	for _, u := range users {
		if c, err := bcrypt.Cost(u.PasswordHash); err == nil {
			cost = max(cost, c)
		}
	}
	if cost == 0 {
		return bcrypt.DefaultCost
	}
	return min(cost, maxDummyCost)
}

// maxDummyCost bounds the unknown-name hash made at start-up: a hash in
// the configuration claims its own cost (up to 31, days of work), and the
// start must not wait on it. At 16 a check takes seconds, past a sign-in's
// time budget, so no real user's hash is dearer.
const maxDummyCost = 16

// Enabled reports whether any local user is configured.
func (l *LocalUsers) Enabled() bool { return len(l.users) > 0 }

// Authenticate returns the user's principal if the password matches.
func (l *LocalUsers) Authenticate(name, password string) (Principal, error) {
	u, ok := l.users[strings.ToLower(strings.TrimSpace(name))]
	hash := l.dummy
	if ok {
		hash = u.PasswordHash
	}
	// bcrypt ignores bytes past 72; refuse them instead of accepting a prefix.
	if err := bcrypt.CompareHashAndPassword(hash, []byte(password)); err != nil || !ok || len(password) > 72 {
		return Principal{}, ErrBadCredentials
	}
	return Principal{Subject: "local:" + u.Name, Name: u.Name, Role: u.Role, Teams: u.Teams, Provider: "local"}, nil
}

// Current is a local principal as configuration has it now: its role may
// have changed, or the user been removed (false), since the session began.
// Sessions keep a role for their life otherwise.
func (l *LocalUsers) Current(p Principal) (Principal, bool) {
	u, ok := l.users[strings.ToLower(strings.TrimPrefix(p.Subject, "local:"))]
	if !ok || p.Provider != "local" {
		return Principal{}, false
	}
	p.Role, p.Teams = u.Role, u.Teams
	return p, true
}

// HashPassword makes the bcrypt hash that FUSEBOX_LOCAL_USERS expects.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}
