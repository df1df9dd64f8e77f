package jobs

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// A job's ping token is its ping secret, apart from its id: the id is
// shown to every viewer, in chat notices and in the API, and must not be
// able to ping. The token is the job's id and 16 random bytes (128 bits),
// in lower-case base32 (52 characters), so a ping finds its job by one
// point read and then compares the whole token in constant time:
//
//	/ping/<token>[/start|/fail|/log|/<exit status>]
//
// Jobs made before tokens existed got one at migration 11 and keep
// answering to their id for a grace the operator chooses
// (FUSEBOX_PING_ID_GRACE, 30 days by default); rotating the token ends it.

var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// PingTokenLength is the length of every ping token.
const PingTokenLength = 52

// DefaultPingIDGrace is how long a migrated job's id keeps pinging.
const DefaultPingIDGrace = 30 * 24 * time.Hour

// NewPingToken makes a ping token for the job with id (a UUID).
func NewPingToken(id string) (string, error) {
	raw, err := hex.DecodeString(strings.ReplaceAll(id, "-", ""))
	if err != nil || len(raw) != 16 {
		return "", fmt.Errorf("jobs: a ping token needs a UUID id, not %q", id)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	return tokenEncoding.EncodeToString(append(raw, secret...)), nil
}

// Fresh is a new job with its id and ping token, made at now.
func Fresh(now time.Time) Job {
	id := NewID()
	token, _ := NewPingToken(id) // NewID makes a UUID
	return Job{ID: id, PingToken: token, CreatedAt: now, Status: New}
}

// PingTokenJob is the id of the job a well-formed token names; ok is false
// for anything else, which then costs no read.
func PingTokenJob(token string) (id string, ok bool) {
	if len(token) != PingTokenLength {
		return "", false
	}
	raw, err := tokenEncoding.DecodeString(token)
	if err != nil || len(raw) != 32 {
		return "", false
	}
	h := hex.EncodeToString(raw[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// PingsWith says whether token is j's ping token, in constant time.
func (j Job) PingsWith(token string) bool {
	return j.PingToken != "" && subtle.ConstantTimeCompare([]byte(j.PingToken), []byte(token)) == 1
}

// PingsByID says whether j still answers to pings by its id at now: a job
// migrated with a token keeps its old URL for grace after the token was
// given, until its token is rotated.
func (j Job) PingsByID(now time.Time, grace time.Duration) bool {
	return j.PingByIDSince != (time.Time{}) && now.Before(j.PingByIDSince.Add(grace))
}

// PingByIDEnds is when j's id stops pinging, zero when it does not ping.
func (j Job) PingByIDEnds(grace time.Duration) time.Time {
	if j.PingByIDSince.IsZero() {
		return time.Time{}
	}
	return j.PingByIDSince.Add(grace)
}
